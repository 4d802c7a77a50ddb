"""The debugging view's what-if and per-request panels: one build function (components, inside the caller's
#debug accordion) and one wire function (events), so the page's groups can take them as they are.

Both panels redraw after every Step, Play tick and Reset (chained to those events), on their own button, on
Enter in a typed setting, and on a change of #lang; each runs unqueued, under the session's lock.
"""
from __future__ import annotations

import gradio as gr

from ..present.debug_panels import DEFAULT_DRAFTS, DEFAULT_GAMMAS, debug_panels_view, requests_panel, whatif_panel
from ..present.i18n import tr
from ..present.plotting import empty_figure


def build_debug_panels(T) -> dict:
    """#whatif-* and #request-* components, by name."""
    with gr.Group(elem_id="whatif-panel"):
        gr.Markdown(T("wi.head"))
        with gr.Row(elem_id="whatif-settings"):
            curve = gr.Textbox("", label=T("wi.curve"), placeholder="0.9, 0.75, 0.6", elem_id="whatif-curve",
                               max_lines=1, scale=3, min_width=220)
            cost = gr.Textbox("", label=T("wi.cost"), placeholder="0.1", elem_id="whatif-cost", max_lines=1,
                              scale=2, min_width=180)
            gammas = gr.Textbox(DEFAULT_GAMMAS, label=T("wi.gammas"), elem_id="whatif-gammas", max_lines=1, scale=1,
                                min_width=140)
            drafts = gr.Textbox(DEFAULT_DRAFTS, label=T("wi.drafts"), elem_id="whatif-drafts", max_lines=1, scale=1,
                                min_width=140)
        run = gr.Button(T("wi.run"), elem_id="whatif-run")
        table = gr.HTML(whatif_panel(None, [], "", "", DEFAULT_GAMMAS, DEFAULT_DRAFTS)[0], elem_id="whatif-table",
                        min_height=0)
        plot = gr.Plot(show_label=False, elem_id="whatif-plot")
    with gr.Group(elem_id="request-panel"):
        gr.Markdown(T("rq.head"))
        note = gr.HTML(requests_panel([])[0], elem_id="request-note", min_height=0)
        histogram = gr.Plot(show_label=False, elem_id="request-histogram")
    return dict(curve=curve, cost=cost, gammas=gammas, drafts=drafts, run=run, table=table, plot=plot, note=note,
                histogram=histogram)


def wire_debug_panels(panels: dict, session, lang, after: list, light: dict) -> None:
    """Redraw both panels on their button, Enter in a setting and #lang, and after each event in `after`
    (Step, Play's tick, Reset: the events whose runs the panels show)."""
    inputs = [session, panels["curve"], panels["cost"], panels["gammas"], panels["drafts"], lang]
    outputs = [panels["table"], panels["plot"], panels["note"], panels["histogram"]]

    def on_panels(s, curve, cost, gammas, drafts, code):
        table, plot, note, histogram = debug_panels_view(s, curve, cost, gammas, drafts, code)
        return table, plot or empty_figure(tr(code, "wi.fig_empty")), note, histogram

    private = {**light, "api_visibility": "private"}
    gr.on([panels["run"].click, panels["curve"].submit, panels["cost"].submit, panels["gammas"].submit,
           panels["drafts"].submit, lang.change], on_panels, inputs, outputs, **private)
    for event in after:
        event.then(on_panels, inputs, outputs, **private)
