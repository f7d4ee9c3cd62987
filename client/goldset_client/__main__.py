import sys

from goldset_client.cli import main

sys.exit(main())
