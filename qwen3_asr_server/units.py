"""Units the settings and the messages that name them share, with nothing imported: the
settings (`settings.limits`) read sizes in them, and the errors (`errors`) say them."""

from __future__ import annotations

MIB = 1 << 20  # the unit of the *_mb settings
