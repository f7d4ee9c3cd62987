# Django's autodiscovery imports this package; each area registers its models in its own module.
from goldset.admin import (
    answers,  # noqa: F401
    corpus,  # noqa: F401
    curation,  # noqa: F401
    exports,  # noqa: F401
)
