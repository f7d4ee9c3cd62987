"""A web process loads its URL configuration, views, authentication backends and templates when
``workbench.wsgi`` is imported (gunicorn does that in each worker before it accepts a
connection), not inside the first request that needs them (issue 17: the cold first request of a
worker was the load benchmark's slowest submit)."""

import json
import logging

from django.template import engines

from tests.workbench.test_settings_and_architecture import PROD_ENV, run
from workbench.warmup import project_templates, warm_up

PROBE = """
import json, sys
import workbench.wsgi
from django.template import engines
from django.urls import get_resolver
loader = engines["django"].engine.template_loaders[0]
print(json.dumps({
    "views": [m for m in ("goldset.views.answers", "goldset.views.curation_reviews",
                          "goldset.views.api", "workbench.auth") if m in sys.modules],
    "reverse_ready": get_resolver()._populated,
    "cached_templates": sorted(loader.get_template_cache),
}))
"""


def test_importing_the_wsgi_module_loads_urls_views_and_templates():
    result = run(["-c", PROBE], {**PROD_ENV, "DATABASE_URL": "sqlite:///:memory:"})
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["views"] == [
        "goldset.views.answers",
        "goldset.views.curation_reviews",
        "goldset.views.api",
        "workbench.auth",
    ]
    assert loaded["reverse_ready"] is True
    assert "answers/item.html" in loaded["cached_templates"]
    assert set(project_templates()) <= set(loaded["cached_templates"])


def test_a_template_that_does_not_compile_is_logged_not_raised(tmp_path, settings, caplog):
    (tmp_path / "broken.html").write_text("{% if %}")
    (tmp_path / "fine.html").write_text("<p>{{ x }}</p>")
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path]}]
    engines._engines.pop("django", None)  # the engine reads the settings again
    try:
        with caplog.at_level(logging.ERROR, logger="workbench.warmup"):
            loaded = warm_up()
        assert loaded["templates"] == 1
        assert "template broken.html does not compile" in caplog.text
    finally:
        engines._engines.pop("django", None)
