"""Row-based channel router (see :mod:`centroid_skills.routing.router`)."""
