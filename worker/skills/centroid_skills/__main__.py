"""Entry point: ``python -m centroid_skills`` (stdio JSON-RPC server)."""

import sys

from centroid_skills.server import main

if __name__ == "__main__":
    sys.exit(main())
