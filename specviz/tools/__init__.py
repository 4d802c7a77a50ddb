"""Command-line tools on top of every layer: generate (cli), bench, report, loadtest, modelcard, train."""
