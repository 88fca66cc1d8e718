"""Skill families; each module declares its skills with :func:`centroid_skills.registry.skill`."""
