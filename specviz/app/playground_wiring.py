"""The playground's events: typed toy distributions redrawn as they are edited, Monte Carlo runs on a button, and
the /playground endpoint. Light work (no model): unqueued and private, but the endpoint."""
from __future__ import annotations

import gradio as gr

from ..core import playground
from ..engine.settings import current as current_deployment
from ..present import render
from ..present.errors import localize
from ..present.views import playground_drafts_run, playground_run, playground_view
from .layout import Playground


def wire_playground(pg: Playground, notation, lang, light: dict, loaded) -> None:
    """The playground's events; a change of #lang redraws its figures and, once run, its tables in the new language."""
    def on_preset(name, seed, code):
        if name == "random":
            try:
                target, draft = playground.random_preset(playground.whole_number("seed", seed or 0, 0, playground.MAX_SEED))
            except ValueError as err:
                raise gr.Error(localize(code, str(err))) from err
        else:
            target, draft = playground.TOY_PRESETS[name]
        return ", ".join(f"{x:g}" for x in target), ", ".join(f"{x:g}" for x in draft)

    def on_edit(tokens, target, draft, kl, n, code):
        decomposition, mentored, status = playground_view(tokens, target, draft, kl, n, code)
        return (decomposition or gr.skip(), mentored or gr.skip(), render.message_html(status))

    def on_run(tokens, target, draft, samples, seed, n, code):
        histogram, summary, status = playground_run(tokens, target, draft, samples, seed, n, code)
        return histogram or gr.skip(), summary, render.message_html(status)

    def on_drafts_run(tokens, target, draft, k, samples, seed, n, code):
        histogram, acceptance, summary, status = playground_drafts_run(tokens, target, draft, k, samples, seed, n, code)
        return histogram or gr.skip(), acceptance or gr.skip(), summary, render.message_html(status)

    def again(run, outputs: int):
        """Re-run in the new language only what was already run (the seed makes it the same rounds)."""
        def redo(shown, *args):
            return run(*args) if shown else (gr.skip(),) * outputs
        return redo

    edits = [pg.tokens, pg.target, pg.draft, pg.kl, notation, lang]
    runs = [pg.tokens, pg.target, pg.draft, pg.samples, pg.seed, notation, lang]
    drafts_runs = [pg.tokens, pg.target, pg.draft, pg.drafts, pg.samples, pg.seed, notation, lang]
    run_out = [pg.histogram, pg.summary, pg.message]
    drafts_out = [pg.drafts_histogram, pg.drafts_acceptance, pg.drafts_summary, pg.message]
    pg.preset.change(on_preset, [pg.preset, pg.seed, lang], [pg.target, pg.draft], **light)
    figures = [pg.decomposition, pg.mentored, pg.message]
    loaded.then(on_edit, edits, figures, **light)   # after the page's language is set, so it draws in that one
    gr.on([pg.tokens.change, pg.target.change, pg.draft.change, pg.kl.release, notation.change,
           lang.change], on_edit, edits, figures, **light)
    pg.run.click(on_run, runs, run_out, **light)
    pg.drafts_run.click(on_drafts_run, drafts_runs, drafts_out, **light)
    gr.on([lang.change, notation.change], again(on_run, 3), [pg.summary, *runs], run_out, **light)
    gr.on([lang.change, notation.change], again(on_drafts_run, 4), [pg.drafts_summary, *drafts_runs], drafts_out,
          **light)
    gr.api(playground_endpoint, api_name="playground", concurrency_limit=current_deployment().concurrency)


def playground_endpoint(target: list[float], draft: list[float], samples: int = 100_000, variant: str = "exact",
                        seed: int = 0) -> dict:
    """Monte Carlo of one speculative round on toy distributions: counts per token, the target
    (`expected`), a chi-square `p_value` against it and the measured `acceptance_rate`."""
    try:
        return playground.simulate(target, draft, samples, variant, seed)
    except ValueError as err:
        raise gr.Error(str(err)) from err
