"""One module per dataset: what it downloads (or reads) and how its release is laid out.

Run one by name with ``mixer-prepare NAME`` or ``python -m mixer_plugin.recipes.<module>``;
the steps every dataset shares are ``mixer_plugin.data``.  See docs/data.md.
"""
