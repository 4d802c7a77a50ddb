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

# The same roles in dark mode (gradio follows the browser's setting and puts `dark` on <body>): lighter hues
# keep >= 4.5:1 for text and >= 3:1 for marks on gradio's dark background (#0b0f19) and its panels (#1f2937).
LIGHT = {"target": TARGET_COLOUR, "draft": DRAFT_COLOUR, "accept": ACCEPT_COLOUR, "reject": REJECT_COLOUR,
         "final": FINAL_COLOUR, "bonus": BONUS_COLOUR, "muted": MUTED, "tick": "#000000", "track": "#e8e8e8",
         "track-edge": "#767676", "zone": ACCEPT_COLOUR, "zone-off": "#f3d3c4", "zone-off-bg": "#ffffff", "text": "#1f1f1f"}
DARK = {"target": "#56B4E9", "draft": "#F0A640", "accept": "#3FC99A", "reject": "#FF8A5C",
        "final": "#E28BC4", "bonus": "#7FB2EE", "muted": "#C2C2C2", "tick": "#FFFFFF", "track": "#3B4252",
        "track-edge": "#9AA0AA", "zone": "#23865F", "zone-off": "#5A3A2E", "zone-off-bg": "#1F2937", "text": "#F3F4F6"}


def var(role: str) -> str:
    """A colour as a CSS variable with the light value as fallback (pages without the app's CSS stay light)."""
    return f"var(--sv-{role}, {LIGHT[role]})"


def css_variables() -> str:
    """The variables `var` names, for light mode and for gradio's dark mode."""
    light = "; ".join(f"--sv-{k}: {v}" for k, v in LIGHT.items())
    dark = "; ".join(f"--sv-{k}: {v}" for k, v in DARK.items())
    return f":root {{ {light}; }}\nbody.dark, .dark {{ {dark}; }}\n"
