"""The deploy step the enrich job needs first: the tiers it assigns, written to tiers.json beside it (as the team's
deploy script fetches them from its pricing service)."""

import json
from pathlib import Path

Path(__file__).with_name("tiers.json").write_text(json.dumps({"gold": 250, "silver": 50}))
