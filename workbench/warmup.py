"""Work a web process does once, at start, instead of inside its first requests.

Django loads the URL configuration (and with it every view, service and the API's schema
machinery), the authentication backends and each template lazily, on the first request that
needs them. In a gunicorn worker that first request paid about a second of imports; because a
user's connection sticks to one worker while it is kept alive and the next one after a pause
lands on any worker, the cost showed up as the slowest submits of the load benchmark (issue 17).
:func:`warm_up` runs at import of :mod:`workbench.wsgi`, so each worker does it before it
accepts a connection.
"""

import logging
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_backends
from django.template import TemplateSyntaxError, engines
from django.urls import get_resolver

logger = logging.getLogger(__name__)


def project_templates() -> list[str]:
    """Names of the project's own templates (the ``DIRS`` folders; app templates are loaded
    by the pages that use them)."""
    names = []
    for config in settings.TEMPLATES:
        for folder in map(Path, config.get("DIRS", [])):
            names += sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*.html"))
    return names


def warm_up() -> dict:
    """Import the URL configuration and the authentication backends and compile the project's
    templates into the cached loader. A template that does not compile is logged, not raised:
    the page that uses it reports the error as it always did. Returns what was loaded."""
    resolver = get_resolver()
    patterns = len(resolver.url_patterns)
    resolver._populate()  # the reverse() tables, otherwise built on the first redirect
    backends = len(get_backends())
    compiled = 0
    engine = engines["django"]
    for name in project_templates():
        try:
            engine.get_template(name)
        except TemplateSyntaxError:
            logger.exception("template %s does not compile", name)
        else:
            compiled += 1
    return {"url_patterns": patterns, "auth_backends": backends, "templates": compiled}
