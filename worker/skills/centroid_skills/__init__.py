"""Centroid layout skills: run inside a headless KLayout Python process.

``python -m centroid_skills`` serves the JSON-RPC 2.0 stdio contract of
``docs/contracts.md`` §2.
"""

__version__ = "0.1.0"
