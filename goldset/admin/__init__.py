# Django's autodiscovery imports this package; each area registers its models in its own module.
from goldset.admin import answers, corpus, curation, evaluators, exports  # noqa: F401
