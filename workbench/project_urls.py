"""URLs into a given project, from anywhere (DESIGN.md §15).

Inside a request under ``/p/<slug>/`` the project is the mount point (workbench.middleware
.ProjectMountMiddleware), so ``reverse`` and ``{% url %}`` already stay in the project. Code that
names another project — the projects home, notifications and webhook payloads built in a task,
the e-mail digest — uses :func:`project_url`; installation pages (sign-in, tokens, the projects
home) use :func:`root_url`, which leaves any project mount.
"""

import re

from django.urls import get_script_prefix, reverse

_MOUNT = re.compile(r"p/[-a-zA-Z0-9_]+/$")


def root_prefix() -> str:
    """The installation's script prefix, without the current project's mount."""
    return _MOUNT.sub("", get_script_prefix())


def _unmounted(path: str) -> str:
    """``path`` (from ``reverse``) relative to the current script prefix, without a leading /."""
    prefix = get_script_prefix()
    return path[len(prefix) :] if path.startswith(prefix) else path.lstrip("/")


def root_url(viewname: str, *args, **kwargs) -> str:
    """An installation page's URL (outside every project)."""
    return root_prefix() + _unmounted(reverse(viewname, args=args or None, kwargs=kwargs or None))


def project_url(project, viewname: str, *args, **kwargs) -> str:
    """``viewname``'s URL inside ``project`` (a Project, or its slug)."""
    slug = getattr(project, "slug", project)
    path = _unmounted(reverse(viewname, args=args or None, kwargs=kwargs or None))
    return f"{root_prefix()}p/{slug}/{path}"


def project_api_url(project, viewname: str, *args, **kwargs) -> str:
    """An API endpoint's URL inside ``project`` (``/api/v1/projects/<slug>/…``)."""
    slug = getattr(project, "slug", project)
    path = _unmounted(reverse(viewname, args=args or None, kwargs=kwargs or None))
    if path.startswith(_API):
        path = f"{_API}projects/{slug}/{path[len(_API) :]}"
    return root_prefix() + path


_API = "api/v1/"


def project_home_url(project) -> str:
    slug = getattr(project, "slug", project)
    return f"{root_prefix()}p/{slug}/"
