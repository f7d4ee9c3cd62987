#!/usr/bin/env python
import os
import sys


def main():
    from workbench.envfile import read_env_file

    read_env_file()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
