"""`python -m specviz.tools.distill STAGE ...`, the same as `python -m specviz distill-smollm2 STAGE ...`."""
from .cli import main

main()
