"""The diagnosis of a draft/target pair in words, from the figures `core.rejections` and the report computed.

Each sentence states a figure and what it points to; the thresholds are `core.rejections`' (named
there). Nothing here measures anything.
"""
from __future__ import annotations

from ..core import rejections as R


def _speed(best: dict) -> str:
    if not best or best.get("measured") is None:
        return ""
    g, s, se = best["measured"], best["speedup"], best["speedup_stderr"] or 0.0
    theory = (f" Thm 3.8 at the measured α {best['alpha']:.2f} and cost ratio c {best['cost_ratio_c']:.2f} predicts "
              f"×{best['thm38_speedup_at_measured']:.2f} there and puts the best γ at {best['thm38']} "
              f"(×{best['thm38_speedup']:.2f}), taking a verify to cost one forward.")
    host = best.get("round_host_share")
    priced_host = bool(best.get("priced_round"))  # the report measured the round's host work
    if best.get("predicted_speedup_at_measured") is not None:
        what = (f"the verify's measured cost (a target pass over γ + 1 positions) and the round's host work "
                f"(warping, the accept test, the trace: {100 * (host or 0):.0f}% of a round here)"
                if priced_host else "the verify's measured cost (a target pass over γ + 1 positions)")
        theory += (f" With {what} the prediction is ×{best['predicted_speedup_at_measured']:.2f} there and the best "
                   f"γ {best['predicted']} (×{best['predicted_speedup']:.2f}).")
    gap = ""
    expected = best.get("predicted_speedup_at_measured") or best["thm38_speedup_at_measured"]
    if expected > 1.2 * s and priced_host:
        gap = (" The measured speedup falls well short of the prediction although it prices every part of a round: "
               "the rounds ran in a busier moment than the timed passes, or the requests ended early (EOS).")
    elif expected > 1.2 * s:
        share = f": {100 * host:.0f}% of a round here" if host else ""
        gap = (" The measured speedup falls well short of the prediction: time outside the model forwards (sampling, "
               f"verification, bookkeeping{share}) weighs more than a cost model of forwards allows at this model size.")
    if s < 1:
        tried = "fixed γ" if best.get("with_auto") else "γ"
        return (f"Speculative decoding is slower than the target alone at every {tried} tried: the best is γ {g} at "
                f"×{s:.2f} ± {se:.2f}.{theory}{gap}")
    return f"Best γ {g}: ×{s:.2f} ± {se:.2f} over target-only.{theory}{gap}"


def _auto(auto: dict | None) -> str:
    """γ auto's measured speed-up beside the fixed γs' best (the report runs it as its own entry)."""
    if not auto or auto.get("speedup") is None:
        return ""
    se = auto.get("speedup_stderr") or 0.0
    drafted = auto.get("draft_calls", 0) / max(auto.get("steps", 0), 1)
    over = auto.get("over_best_fixed")
    beside = f", {over:.2f} of the best fixed γ's" if over is not None else ""
    return (f"γ auto (a draft length that adapts; {drafted:.2f} drafted a round): ×{auto['speedup']:.2f} ± {se:.2f}"
            f"{beside}.")


def _misconfigurations(f: dict) -> list[str]:
    """One sentence each for the settings errors of `core.rejections.misconfigurations`."""
    out = []
    if f.get("non_finite_probabilities"):
        out.append(f"NaN logits: {f['non_finite_probabilities']} tested drafts have a NaN or infinite p or q; a "
                   "comparison with NaN is always false, so the accept test then accepts all or nothing: check the "
                   "models' dtype (fp16 overflow) and the logits processors.")
    if f.get("all_or_nothing"):
        out.append(f"Every tested draft was {'accepted' if f['acceptance_rate'] == 1 else 'rejected'} although the "
                   f"target is unsure (mean entropy {f['mean_target_entropy']:.2f} nats): the accept test is not "
                   "testing, as with NaN logits or a draft that is the target itself.")
    if f.get("greedy_draft"):
        out.append(f"Greedy draft: the draft's mean entropy is {f['mean_draft_entropy']:.3f} nats (one-hot q) while the "
                   f"target samples at T > 0 (mean entropy {f['mean_target_entropy']:.2f} nats): each draft is then "
                   "accepted with chance p(argmax q) instead of Σ min(p, q); let the draft sample with the target's "
                   "temperature, top-k and top-p.")
    if f.get("not_drafting"):
        out.append(f"Acceptance length ≈ 1 (α = {f['acceptance_rate']:.3f}): the draft is not working (a head that is "
                   "not loaded or not trained for this target, the wrong speculative mode, or logits read at the "
                   "wrong position); every round pays for γ drafts and keeps none.")
    if f.get("ids_mismatch"):
        out.append(f"Tokenizer mismatch: a confident draft whose top choice is the target's on only "
                   f"{f['argmax_agreement']:.0%} of positions (below {R.MISMATCH_AGREEMENT:.0%}): the two models' "
                   "token ids mean different tokens (another tokenizer, or a head whose rows are in another order); use a "
                   "draft trained with the target's tokenizer.")
    return out


def _defects(f: dict) -> list[str]:
    out = _misconfigurations(f)
    if f["disagrees"]:
        out.append(f"The draft's most likely token is the target's on only {f['argmax_agreement']:.0%} of tested "
                   f"positions (below {R.AGREEMENT_LOW:.0%}): the draft models a different distribution, as a "
                   "damaged or mismatched checkpoint, another tokenizer or prompt format, or a draft too weak "
                   "for this text would.")
    if f["temperature_mismatch"] and not f.get("greedy_draft"):
        side, guess = (("sharper", "a lower temperature (or a tighter top-k/top-p)") if f["draft_sharper"]
                       else ("flatter", "a higher temperature (or a looser top-k/top-p)"))
        out.append(f"Temperature mismatch: the draft is much {side} than the target (its mean entropy is "
                   f"{f['entropy_ratio']:.2f} times the target's) while their top choices agree on "
                   f"{f['argmax_agreement']:.0%} of positions: the draft looks sampled at {guess} than the "
                   "target; give both the same sampling settings.")
    elif (f["draft_sharper"] or f["draft_flatter"]) and not f.get("greedy_draft"):
        side = "sharper" if f["draft_sharper"] else "flatter"
        out.append(f"The draft is also much {side} than the target (entropy ratio {f['entropy_ratio']:.2f}).")
    if f["overconfident"]:
        out.append(f"The draft is overconfident: {f['overconfident_share']:.0%} of rejections are tokens it gave "
                   f"q > {R.OVERCONFIDENT_Q:g} where the target gave p < {R.OVERCONFIDENT_P:g}.")
    if not out:
        out.append("No defect stands out: the draft's top choices agree with the target's "
                   f"({f['argmax_agreement']:.0%}), its confidence matches (entropy ratio "
                   f"{(f['entropy_ratio'] or 0):.2f}) and few rejections are confident misses "
                   f"({f['overconfident_share']:.0%}).")
    return out


def _where(analysis: dict) -> str:
    supported = [g for g in analysis["by_token_class"] if g["n"] >= analysis["min_support"]]
    if len(supported) < 2:
        return ""
    low, high = min(supported, key=lambda g: g["rate"]), max(supported, key=lambda g: g["rate"])
    return (f"Acceptance is lowest on {low['group']} tokens ({low['rate']:.2f}, n = {low['n']}) and highest on "
            f"{high['group']} tokens ({high['rate']:.2f}, n = {high['n']}).")


def _temperature(sweep: dict | None, temperature: float) -> str:
    if not sweep:
        return ""
    temps, rates = sweep["temperatures"], sweep["acceptance_rate"]
    here = min(range(len(temps)), key=lambda i: abs(temps[i] - temperature))
    # only cooler: any two laws overlap more as both flatten, so a hotter T "helps" by changing the output most
    best = max((i for i in range(len(temps)) if temps[i] <= temps[here]), key=lambda i: rates[i])
    if rates[best] - rates[here] < 0.05:
        return ""
    return (f"Both models at T = {temps[best]:g} instead of {temperature:g} would raise the acceptance Σmin(p, q) "
            f"on this text from {rates[here]:.2f} to {rates[best]:.2f} (if the output may be that much cooler).")


def diagnosis_text(analysis: dict, best: dict | None, sweep: dict | None, temperature: float,
                   auto: dict | None = None) -> str:
    """One paragraph: the speed answer (the fixed γs', then γ auto's where it ran), α, each defect found, where
    acceptance is lowest, a temperature hint."""
    f = analysis["findings"]
    if not f["tested"]:
        return "No draft was tested: nothing to diagnose."
    speed = _speed({**(best or {}), "with_auto": bool(auto)} if best else {})
    parts = [speed, _auto(auto), f"α = {f['acceptance_rate']:.2f} (accepted / tested drafts, n = {f['tested']}).",
             *_defects(f), _where(analysis), _temperature(sweep, temperature)]
    return " ".join(p for p in parts if p)
