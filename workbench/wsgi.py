import os

from django.core.wsgi import get_wsgi_application

from workbench.envfile import read_env_file

read_env_file()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")
application = get_wsgi_application()

from workbench.warmup import warm_up  # noqa: E402  (needs the settings configured above)

warm_up()
