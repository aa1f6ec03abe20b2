"""Renderers: present an Analysis. They only format what the core returns."""
