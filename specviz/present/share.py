"""A live run as a link, and a link back to a run: the recipe's settings by name, the producer, the replay check.

`link_recipe` turns a tab's run into a `core.recipe.Recipe` (every setting by name, the step shown, the digest
of its tokens, this process as producer); `replay` runs a recipe's settings afresh to its step, on the pair the
deployment offers (never another: settings go through `views.settings_from`, which asks `policy.visitor_pair`),
and compares digests, so a link that does not reproduce says why instead of showing another run as the same.
The replay goes through the race's cost prediction (`engine.serving.replay`): one predicted past the event's time
is refused or cut to the steps that fit, and one the machine makes slower stops between two rounds at the
deadline; each says so, naming the step, γ, drafts and new tokens to change.
"""
from __future__ import annotations

from ..core.recipe import Producer, Recipe, RecipeError, decode_recipe, encode_recipe, producer_here, token_digest
from ..engine import limits
from ..engine.serving.replay import Replay, replay_to
from ..engine.serving.run import ComparedRun, RunSettings
from .i18n import tr
from .page_settings import STEP_PARAMETERS, PageSettings, settings_from

# The page's settings by name (PageSettings' fields): what a link must hold to rerun a tab's run, and the letters
# it was drawn in. The language is not one: it travels as the link's own ?lang=, and the opener may change it.
LINK_SETTINGS = tuple(name for name in STEP_PARAMETERS if name != "lang")


def dtype_text(pair) -> str:
    """The pair's arithmetic: "float32", with ", target layers bfloat16" where the target's linear layers hold another
    dtype and ", draft bfloat16" where the draft computes in another."""
    target = str(pair.dtype).removeprefix("torch.")
    layers = str(getattr(pair, "target_weights", None) or pair.dtype).removeprefix("torch.")
    draft = str(pair.draft_dtype or pair.dtype).removeprefix("torch.")
    return ", ".join([target] + [f"target layers {layers}"] * (layers != target) + [f"draft {draft}"] * (draft != target))


def producer_of(run: ComparedRun) -> Producer:
    """This process as the producer of `run` (its device as the counters name it, its dtypes)."""
    return producer_here(run.device, dtype_text(run.settings.load()))


def settings_of(run_settings: RunSettings, notation: str) -> dict:
    """A run's settings by name (PageSettings' fields but the language), as the page's controls hold them: read
    from what ran, so a link reruns the run shown even if a control was changed since."""
    c, pair = run_settings.config, run_settings.pair
    own = not pair.name
    named = {"notation": notation, "preset": pair.name, "prompt": run_settings.prompt, "gamma": c.gamma_shown,
             "temperature": c.temperature, "top_k": c.top_k, "top_p": c.top_p, "kl_budget": c.kl_budget,
             "seed": c.seed, "max_new_tokens": c.max_new_tokens, "draft_model": pair.draft if own else "",
             "target_model": pair.target if own else "", "drafts": c.drafts, "drafter": c.drafter}
    return {name: named[name] for name in LINK_SETTINGS}


def link_recipe(run: ComparedRun, step: int, notation: str) -> str:
    """The encoded recipe of `run` shown at `step` (RecipeError where the prompt makes it too long for a link)."""
    recipe = Recipe(settings=settings_of(run.settings, notation), step=step, digest=token_digest(run.traces, step),
                    producer=producer_of(run))
    return encode_recipe(recipe)


def read_link(text) -> Recipe:
    return decode_recipe(text, LINK_SETTINGS)


def page_settings_of(recipe: Recipe, lang: str = "en") -> PageSettings:
    return PageSettings(**recipe.settings, lang=lang)


def run_settings_of(recipe: Recipe) -> RunSettings:
    """The recipe's settings as this deployment would run them: ValueError / ModelLoadError naming a setting out
    of range or a pair it does not offer."""
    return settings_from(page_settings_of(recipe))


def _knobs(recipe: Recipe, predicted: float | None) -> dict:
    s = recipe.settings
    return {"step": recipe.step, "gamma": s["gamma"], "drafts": s["drafts"], "tokens": s["max_new_tokens"],
            "s": f"{predicted or 0:.0f}", "limit": f"{limits.limit_s():g}"}


def replay_cut(done: Replay, recipe: Recipe, lang: str = "en") -> str:
    """Why a replay ended short of the link's step for want of time ("" when it did not): refused, cut, or stopped."""
    if done.refused:
        return tr(lang, "share.refused", **_knobs(recipe, done.predicted_s))
    if done.stopped_s:
        slower = tr(lang, "share.slower", s=f"{done.predicted_s:.0f}") if done.predicted_s else ""
        return tr(lang, "share.stopped", n=done.reached, why=slower, **_knobs(recipe, done.predicted_s))
    if done.cut and done.reached < recipe.step and not done.run.finished:
        return tr(lang, "share.cut", n=done.reached, **_knobs(recipe, done.predicted_s))
    return ""


def replay(recipe: Recipe, lang: str = "en") -> tuple[ComparedRun | None, str]:
    """The recipe's run replayed to its step; (the run, "" when its tokens match the link's, else why not). The run
    is None where the replay was refused as too long for the event. Raises what a Step raises on bad settings
    (ValueError, ModelLoadError)."""
    done = replay_to(run_settings_of(recipe), recipe.step)
    short = replay_cut(done, recipe, lang)
    run = done.run
    if short:
        return run, short
    if len(run.traces) < recipe.step:
        return run, tr(lang, "share.ended", n=len(run.traces), step=recipe.step)
    here = producer_of(run)
    digest = token_digest(run.traces, recipe.step)
    if digest == recipe.digest:
        return run, ""
    differs = recipe.producer.differences(here)
    why = "; ".join(differs) if differs else tr(lang, "share.same_versions")
    return run, tr(lang, "share.mismatch", step=recipe.step, got=digest, want=recipe.digest, why=why)


__all__ = ["RecipeError", "link_recipe", "read_link", "replay", "producer_of", "settings_of", "LINK_SETTINGS"]
