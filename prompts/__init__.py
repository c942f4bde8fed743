"""Versioned prompt templates shared by construction and evaluation. Nothing is exported yet."""
