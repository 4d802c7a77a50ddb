"""The page's words in English, Chinese and Japanese: one dict per language, the same keys in each.

Letters and formulas (p, q, u, γ, min(1, p/q), norm(max(0, p − q))) stay as they are in every language;
they arrive as format arguments ({t}, {d}) so the notation switch works everywhere. Terms follow the
field's own usage in each language: Kylin's post "Speculative Decoding 的 Sampling 误解浅析" (推测解码,
重采样, 接受 / 拒绝) and Masada's lecture slides "Speculative Decoding" (採用, サンプリングし直す, 分布).
`tests/present/test_i18n.py` checks every key exists in every language with the same placeholders.

Long because it is a table: three dicts of the same keys, kept in one file so a translator sees them side
by side (Kylin's post in fact writes accept/reject in English; Masada's slides say 採用する / 採用されない).
"""
from __future__ import annotations

import re

from . import i18n_views as views

LANGUAGES = {"en": "English", "zh": "中文", "ja": "日本語"}
DEFAULT = "en"


def pick(locale: str | None) -> str:
    """The catalogue for a browser locale or Accept-Language value: "zh-CN" -> zh, "ja-JP" -> ja, else en.

    Traditional Chinese (zh-TW, zh-HK, zh-Hant) also gets zh, the Simplified catalogue: a reader of
    Traditional characters reads Simplified far more easily than English, and there is no zh-Hant one."""
    for part in (locale or "").replace("_", "-").split(","):
        code = part.split(";")[0].strip().lower().split("-")[0]
        if code in LANGUAGES:
            return code
    return DEFAULT


def tr(lang: str, key: str, **args) -> str:
    """The text of `key` in `lang` (English where the language is unknown), formatted with args."""
    code = lang if isinstance(lang, str) and lang in CATALOGUE else DEFAULT
    text = CATALOGUE[code][key].format(**args) if args else CATALOGUE[code][key]
    return _english_plurals(text) if code == "en" else text


def _english_plurals(text: str) -> str:
    """English's "(s)" resolved from the number before it: "1 token", "3 tokens", "positions 2–4", "position 3"."""
    text = re.sub(r"\b1 token\(s\)", "1 token", text).replace("token(s)", "tokens")
    text = re.sub(r"position\(s\) (\d+[–,])", r"positions \1", text).replace("position(s)", "position")
    text = re.sub(r"\b1 ([a-z]+)\(s\)", r"1 \1", text)   # "1 step(s)", "1 candidate(s)"
    return re.sub(r"([a-z])\(s\)", r"\1s", text)


EN = {
    # page and components
    "title": "specviz — speculative decoding, step by step",
    "tab.live": "Live models",
    "tab.playground": "Playground: the proof",
    "btn.step": "Step",
    "btn.play": "Play",
    "btn.pause": "Pause",
    "btn.reset": "Reset",
    "lbl.lang": "Language",
    "lbl.classroom": "Classroom mode",
    "lbl.reveal": "Reveal phase by phase",
    "lbl.prompt": "Prompt",
    "lbl.examples": "Example prompts",
    "lbl.preset": "Model pair",
    "lbl.gamma": "γ: tokens drafted per step",
    "lbl.drafter": "Drafter: who proposes the tokens the target verifies",
    "drafter.model": "draft model",
    "drafter.lookup": "prompt lookup (copies from the prompt and output; no model)",
    "lbl.drafts": "k: drafts per step (> 1: k chains verified as a token tree)",
    "lbl.temperature": "temperature (0 = greedy)",
    "lbl.kl": "KL budget (0 = exact; > 0 = mentored decoding, LOSSY)",
    "lbl.kl_scale": "KL budget on a log scale (leftmost = 0, exact)",
    "lbl.notation": "Notation",
    "lbl.more": "More settings",
    "lbl.top_k": "top-k (0 = off)",
    "lbl.top_p": "top-p (1 = off)",
    "lbl.seed": "random seed of the run",
    "lbl.max_new": "max new tokens",
    "lbl.speed": "Play: seconds per step",
    "lbl.own_pair": "Your own pair (hub ids or local folders; replace the preset)",
    "lbl.draft_model": "draft model",
    "lbl.target_model": "target model",
    "lbl.show_rejected": "show rejected drafts (struck through)",
    "lbl.view_step": "showing step",
    "lbl.details": "Full distributions and the story in words",
    "lbl.history": "The run so far",
    "lbl.debug": "Debug acceptance: metrics, rejections, temperature sweep, export",
    "lbl.rejections": "every rejection (click a row to see its step)",
    "btn.sweep": "Temperature sweep on the current context",
    "btn.export": "Export the run",
    "lbl.json": "traces (JSON)",
    "lbl.csv": "tokens (CSV)",
    "pg.intro": ("Two distributions over a few named tokens, no model: watch why speculative sampling's output is "
                 "**exactly** the target's, and what two common shortcuts get wrong. Weights are renormalised."),
    "pg.preset": "preset",
    "pg.tokens": "token names (comma separated)",
    "pg.target": "target weights",
    "pg.draft": "draft weights",
    "pg.samples": "rounds",
    "pg.seed": "random seed",
    "pg.run": "Run the rounds",
    "pg.kl": "mentored decoding: KL budget (nats)",
    # what you are seeing
    "what": ("<b>What you are seeing.</b> A small <b>draft</b> model guesses γ tokens; the large <b>target</b> model "
             "checks them all in <b>one</b> pass. The text that comes out is distributed <b>exactly</b> as the "
             "target's own samples, and each target pass yields 1 + the number of accepted drafts."),
    "intro": ("A small **draft** model guesses γ tokens; the large **target** model checks all of them in **one** "
              "forward pass. Each guess is kept when a uniform draw u falls below min(1, {t}/{d}); at the first "
              "rejection a replacement is drawn from the *residual* norm(max(0, {t} − {d})); if all are kept, the "
              "target adds a *bonus* token. The output is distributed **exactly** as the target alone would sample "
              "it (at temperature 0 this reduces to \"keep drafts while the argmaxes agree\"), yet each target pass "
              "can yield several tokens."),
    "keys": "Keys: <kbd>s</kbd> Step, <kbd>p</kbd> Play/Pause; Tab + Enter on a token shows its step.",
    # step card
    "card.empty": ("Press <b>Step</b><span class=\"key-hint\"> (or the <kbd>s</kbd> key)</span> to run one round: "
                   "the draft proposes γ tokens, the target checks them all in one pass, and one token is corrected "
                   "or added."),
    "card.step": "Step {n}",
    "card.viewing": " (viewing; latest is {total})",
    "card.tokens_from_pass": "{k} token(s) from one target pass",
    "badge.exact": "exact",
    "badge.greedy": "greedy (T = 0)",
    "badge.lossy": "LOSSY: mentored decoding, KL budget {kl}",
    "card.lookup": ("<b>1. Draft</b> — prompt lookup, no draft model: the last {n} token(s) occurred earlier in the {where}, "
                    "so the {g} token(s) that followed are copied: {source}. {d} is one-hot: {d}(x) = 1 for a copied token, "
                    "so its accept chance min(1, {t}(x)/1) is {t}(x)."),
    "card.lookup_none": ("<b>1. Draft</b> — prompt lookup: the last tokens occur nowhere earlier in the {where}, so nothing "
                         "is copied. This round is one target pass; its token is drawn from {t}, as in target-only decoding."),
    "lookup.prompt": "prompt",
    "lookup.output": "output so far",
    "lookup.context": "prompt and output",
    "chance.lookup": "min(1, {t}/1) = {t}(x) = ",
    "why.lookup": ": {t} with the copied token removed, renormalised ({d} is one-hot)",
    "sum.lookup_none": "Step {n}: no earlier match, nothing copied",
    "nar.lookup": ("**1. Draft (prompt lookup):** the last {n} token(s) {ngram} occurred earlier in the {where}; the {g} "
                   "token(s) after them were copied: {tokens}. The copy is certain, {d}(x) = 1, so each is kept with "
                   "chance {t}(x), and after a rejection the replacement comes from {t} without that token."),
    "nar.lookup_none": ("**1. Draft (prompt lookup):** the last tokens occur nowhere earlier in the {where}: nothing to copy, "
                        "so this round is a single target pass."),
    "card.draft": "<b>1. Draft</b> — the draft model sampled {g}: {tokens}",
    "card.draft_reads": ("This draft reads the target's last hidden state where the target has computed it (up to "
                         "the last verified token) and its own guess of it for the tokens it drafts now (EAGLE). What it "
                         "reads changes only {d}: the verify step keeps the output exactly the target's."),
    "card.verify": ("<b>2. Verify</b> — one target pass scored them all. A draft x is kept if u &lt; min(1, {t}(x)/{d}(x)), "
                    "where <b>u</b> is a fresh uniform random number in [0, 1), one per position."),
    "card.verify_greedy": ("<b>2. Verify</b> — one target pass scored them all. At T = 0 both models are certain: "
                           "a draft is kept while it is the target's argmax (no random draw)."),
    "card.verify_mentored": ("<b>2. Verify</b> — one target pass scored them all. A draft is kept if u &lt; its "
                             "mentored accept chance, where <b>u</b> is a fresh uniform random number in [0, 1); "
                             "exact decoding would use min(1, {t}/{d}) with the same u."),
    "col.drafted": "drafted",
    "col.bars": "{d}(x), {t}(x), log scale",
    "col.ratio": "ratio",
    "col.rule": "accept if u &lt; min(1, {t}/{d})",
    "col.rule_mentored": "accept if u &lt; accept chance",
    "col.rule_greedy": "argmax test",
    "col.verdict": "verdict",
    "verdict.accepted": "accepted",
    "verdict.rejected": "rejected",
    "greedy.test": "target argmax {token}: {agrees}",
    "greedy.agrees": "agrees",
    "greedy.differs": "differs",
    "mentored.rest": "· exact {e} · KL {kl}/{budget}",
    "mentored.exact_rejects": "exact decoding would have rejected here",
    "mentored.exact_accepts": "exact decoding would have accepted here",
    "skipped": "position(s) {span} ({tokens}): not examined, an earlier draft was rejected",
    "correct.bonus": ("<b>3. Correct</b> — all {g} drafts accepted, so the target pass already holds the next "
                      "distribution {t}: <b>bonus</b> token {token} for free."),
    "correct.resampled": "<b>3. Correct</b> — position {pos} was rejected: <b>resampled</b> {token} from {source}{why}.",
    "correct.lookup_none": ("<b>3. Correct</b> — nothing to verify: the one target pass draws {token} from {t}, as "
                            "target-only decoding would."),
    "why.mentored": ", the mentored resampling distribution",
    "why.greedy": ": at temperature 0 that is the target's argmax",
    "why.residual": ", the residual: the mass the target wants beyond what the draft gave",
    "source.mentored": "mentored s",
    "top_of": "top of {source}:",
    "exact_prob": "exact {x}",
    # round summary
    "sum.kept": "Step {n}: drafted {g}, kept {k}",
    "sum.kept_all": "Step {n}: drafted {g}, kept all {g}",
    "sum.resampled": "resampled {token} from the residual",
    "sum.resampled_greedy": "the target's argmax {token} replaced draft {pos}",
    "sum.resampled_mentored": "resampled {token} from the mentored distribution s",
    "sum.bonus": "bonus token {token} from the target",
    "sum.result": "{k} token(s) from 1 target pass",
    "sum.exact_would": "exact decoding would have decided otherwise at position(s) {where}",
    "sum.lossy": "lossy",
    "p.semicolon": "; ",
    "p.colon": ": ",
    "p.period": ".",
    "sum.empty": "After each Step, one sentence here says what the round did.",
    # narration
    "nar.empty": "*Nothing yet: press **Step**.*",
    "nar.draft": "**1. Draft:** the draft model proposed {g} tokens: {tokens}.",
    "nar.verify": "**2. Verify:** the target scored all of them in one forward pass.",
    "nar.skipped": "- {token}: not examined, an earlier token was rejected.",
    "nar.greedy": ("- {token}: at temperature 0 both models are certain of their argmax; the target's argmax is {argmax}, "
                   "so the argmaxes {agree}: **{verdict}**."),
    "nar.agree": "agree",
    "nar.differ": "differ",
    "nar.mentored_chance": ("the mentored accept chance {m} (exact decoding: min(1, {t}/{d}) = {e}; KL spent here {kl} "
                            "of the {budget} budget)"),
    "nar.row": ("- {token}: the draft gave {d} = {q}, the target gives {t} = {p}; the uniform draw u = {u} {cmp} "
                "{chance}: **{verdict}**."),
    "nar.correct_mentored": ("**3. Correct:** position {pos} was rejected, so {token} was drawn from mentored decoding's "
                             "resampling distribution s, which leans towards tokens the target rates far above the draft, "
                             "instead of the exact residual norm(max(0, {t} − {d}))."),
    "nar.correct_resampled": ("**3. Correct:** position {pos} was rejected, so a replacement {token} was drawn from the "
                              "residual norm(max(0, {t} − {d})), which puts mass only where the target wants more than "
                              "the draft gave."),
    "nar.correct_bonus": ("**3. Correct:** every drafted token was accepted, so the target's distribution at the next "
                          "position (already computed) gave a bonus token {token} for free."),
    "nar.total": "This step emitted **{k} token(s) for one target forward pass** ({a} accepted + 1 {kind}).",
    "nar.lossy": ("*Mentored decoding (KL budget {budget} nats): lossy, the output may differ from the target's "
                  "distribution by up to that KL at each position.*"),
    "nar.note": "*Note: {note}.*",
    "kind.resampled": "resampled",
    "kind.bonus": "bonus",
    # generated text
    "chip.title": "step {n}: {verdict} (Enter shows the step)",
    "legend.hint": "click or Tab + Enter on a token to see its step",
    "verdict.resampled": "resampled",
    "verdict.bonus": "bonus",
    # counters
    "cnt.empty": "Counters appear after the first step.",
    "cnt.speculative": "speculative",
    "cnt.target_only": "target only",
    "cnt.tokens": "tokens",
    "cnt.target_passes": "target passes",
    "cnt.draft_passes": "draft passes",
    "cnt.tokens_per_s": "tokens / s",
    "cnt.argument": ("Target passes: <b>{spec}</b> speculative vs <b>{base}</b> target-only · <b>{tpp}</b> tokens per "
                     "target pass · {speed}"),
    "cnt.speedup": "<b>speedup ×{s} ± {se}</b>",
    "cnt.warming": "speedup: warming up ({n}/{need} steps)",
    "cnt.alpha": "α (accepted / tested) <b>{a}</b> · mean acceptance length <b>{m}</b>",
    "cnt.lossy": "LOSSY run vs an exact baseline",
    "cnt.warming_long": ("<b>speedup</b>: warming up (timings count once both sides have {need} forwards; now {n} "
                         "step(s))"),
    "cnt.measured": ("<b>speedup ×{s} ± {se}</b> measured here ({device}); Thm 3.8 predicts ×{pred} for α = {a}, "
                     "c = {c}; best γ {best}"),
    # KL budget
    "kl.buys": "exact (KL 0): acceptance {exact} here · at KL {kl}: {mentored}",
    "kl.exact": "KL 0: exact speculative sampling (lossless)",
    "kl.none": "the acceptance each budget buys shows after the first Step",
    # debug
    "dbg.empty": "The metrics appear after the first step.",
    # messages
    "msg.reset": "Reset: a fresh run starts with the next Step.",
    "msg.settings_changed": "Settings changed: started a new run with them. ",
    "msg.finished": "Generation finished (EOS or max new tokens).",
    "msg.graphs_captured": "CUDA graphs of both models captured in {s} s (once per run, before its first timed step). ",
    "msg.caches_rebuilt": "This run's KV caches had been freed for other runs or pairs (memory is shared by every visitor) and were rebuilt from its tokens first, in {s} s (not in this step's timings). ",
    "msg.cannot_step": "{detail}",
    "msg.done_reset": "generation has finished: press Reset (or change a setting) to start again",
    "msg.models_failed": "the models failed: {detail}",
    "msg.sweep_first": "press Step first: the sweep runs on the current run's context",
    "msg.sweep_zerogpu": "the sweep is not available on ZeroGPU",
    "msg.sweep_failed": "the sweep failed: {detail}",
    "fig.empty": "press Step to draft and verify",
}

ZH = {
    "title": "specviz — 推测解码，一步一步看",
    "tab.live": "真实模型",
    "tab.playground": "演练场：证明",
    "btn.step": "单步",
    "btn.play": "播放",
    "btn.pause": "暂停",
    "btn.reset": "重置",
    "lbl.lang": "语言",
    "lbl.classroom": "课堂模式",
    "lbl.reveal": "逐阶段展示",
    "lbl.prompt": "提示词",
    "lbl.examples": "示例提示词",
    "lbl.preset": "模型对",
    "lbl.gamma": "γ：每步草稿 token 数",
    "lbl.drafter": "起草方式：由谁提出交给目标模型验证的 token",
    "drafter.model": "草稿模型",
    "drafter.lookup": "提示查找（从提示词和输出中复制；不用模型）",
    "lbl.drafts": "k：每步草稿条数（> 1：k 条链作为 token 树一起验证）",
    "lbl.temperature": "温度（0 = 贪心解码）",
    "lbl.kl": "KL 预算（0 = 精确；> 0 = mentored decoding，有损）",
    "lbl.kl_scale": "对数刻度的 KL 预算（最左端 = 0，精确）",
    "lbl.notation": "记号",
    "lbl.more": "更多设置",
    "lbl.top_k": "top-k（0 = 关闭）",
    "lbl.top_p": "top-p（1 = 关闭）",
    "lbl.seed": "本次运行的随机种子",
    "lbl.max_new": "最大生成 token 数",
    "lbl.speed": "播放：每步秒数",
    "lbl.own_pair": "自选模型对（hub id 或本地文件夹；替代预设）",
    "lbl.draft_model": "草稿模型",
    "lbl.target_model": "目标模型",
    "lbl.show_rejected": "显示被拒绝的草稿（删除线）",
    "lbl.view_step": "当前显示的步",
    "lbl.details": "完整分布与文字叙述",
    "lbl.history": "本次运行至今",
    "lbl.debug": "调试接受率：指标、拒绝记录、温度扫描、导出",
    "lbl.rejections": "全部拒绝记录（点击一行查看该步）",
    "btn.sweep": "在当前上下文上做温度扫描",
    "btn.export": "导出本次运行",
    "lbl.json": "轨迹（JSON）",
    "lbl.csv": "token（CSV）",
    "pg.intro": ("几个具名 token 上的两个分布，不用模型：看推测采样的输出为什么与目标模型的分布**完全一致**，"
                 "以及两种常见的捷径错在哪里。权重会自动归一化。"),
    "pg.preset": "预设",
    "pg.tokens": "token 名称（逗号分隔）",
    "pg.target": "目标分布权重",
    "pg.draft": "草稿分布权重",
    "pg.samples": "轮数",
    "pg.seed": "随机种子",
    "pg.run": "运行",
    "pg.kl": "mentored decoding：KL 预算（nats）",
    "what": ("<b>界面说明。</b>小的<b>草稿模型</b>先猜 γ 个 token；大的<b>目标模型</b>用<b>一次</b>前向计算检查全部"
             "。输出文本的分布与目标模型自己采样的分布<b>完全相同</b>，而每次目标模型前向计算产出（被接受的草稿数 + 1）个 token。"),
    "intro": ("小的**草稿模型**猜 γ 个 token；大的**目标模型**用**一次**前向计算检查全部。当均匀随机数 u 小于 min(1, {t"
              "}/{d}) 时接受该猜测；在第一个被拒绝的位置，从*残差分布* norm(max(0, {t} − {d})) 重采样一个替代 toke"
              "n；若全部被接受，目标模型再给出一个*额外 token*（bonus token）。输出的分布与目标模型单独采样**完全相同**（温度为 "
              "0 时才退化为“argmax 一致就保留草稿”），但每次目标模型前向计算可以产出多个 token。"),
    "keys": "按键：<kbd>s</kbd> 单步，<kbd>p</kbd> 播放/暂停；用 Tab 选中 token 后按 Enter 查看它所在的步。",
    "card.empty": ("按 <b>单步</b><span class=\"key-hint\">（或 <kbd>s</kbd> 键）</span>运行一步：草稿模"
                   "型提出 γ 个 token，目标模型用一次前向计算检查全部，然后修正或追加一个 token。"),
    "card.step": "第 {n} 步",
    "card.viewing": "（正在查看；最新为第 {total} 步）",
    "card.tokens_from_pass": "一次目标模型前向计算产出 {k} 个 token",
    "badge.exact": "精确",
    "badge.greedy": "贪心解码（T = 0）",
    "badge.lossy": "有损：mentored decoding，KL 预算 {kl}",
    "card.lookup": ("<b>1. 起草</b> — 提示查找（prompt lookup），不用草稿模型：最后 {n} 个 token 在{where}中出现过，"
                    "于是复制其后的 {g} 个 token：{source}。{d} 是 one-hot：被复制的 token 有 {d}(x) = 1，"
                    "所以它的接受概率 min(1, {t}(x)/1) 就是 {t}(x)。"),
    "card.lookup_none": ("<b>1. 起草</b> — 提示查找：最后的 token 在{where}中没有更早的出现，无可复制。"
                         "本轮只是一次目标模型前向，token 从 {t} 中采样，与只用目标模型的解码相同。"),
    "lookup.prompt": "提示词",
    "lookup.output": "已生成的输出",
    "lookup.context": "提示词和已生成的输出",
    "chance.lookup": "min(1, {t}/1) = {t}(x) = ",
    "why.lookup": "：即去掉被复制的 token 后重新归一化的 {t}（{d} 是 one-hot）",
    "sum.lookup_none": "第 {n} 步：没有更早的匹配，未复制任何 token",
    "nar.lookup": ("**1. 起草（提示查找）**：最后 {n} 个 token {ngram} 在{where}中出现过；复制了其后的 {g} 个 token：{tokens}。"
                   "复制是确定的，{d}(x) = 1，所以每个 token 以概率 {t}(x) 被接受；被拒绝后，替代 token 从去掉该 token 的 {t} 中采样。"),
    "nar.lookup_none": "**1. 起草（提示查找）**：最后的 token 在{where}中没有更早的出现，无可复制，所以本轮只是一次目标模型前向。",
    "card.draft": "<b>1. 起草</b> — 草稿模型采样了 {g} 个：{tokens}",
    "card.draft_reads": ("这个草稿模型在目标模型已计算过的位置（直到最后一个已验证的 token）"
                         "读取目标模型最后一层的隐藏状态，在正在起草的位置读取它自己对该隐藏状态的预测（EAGLE 方法）。"
                         "它读到什么只影响 {d}：验证步骤保证输出分布仍与目标模型完全相同。"),
    "card.verify": ("<b>2. 验证</b> — 目标模型一次前向计算给全部打分。若 u &lt; min(1, {t}(x)/{d}(x)) 则接受草稿 x，"
                    "其中 <b>u</b> 是每个位置新抽取的 [0, 1) 均匀随机数。"),
    "card.verify_greedy": "<b>2. 验证</b> — 目标模型一次前向计算给全部打分。T = 0 时两个模型都是确定的：只要草稿是目标模型的 argmax 就接受（不抽随机数）。",
    "card.verify_mentored": ("<b>2. 验证</b> — 目标模型一次前向计算给全部打分。若 u &lt; mentored 接受概率则接受草稿，"
                             "其中 <b>u</b> 是新抽取的 [0, 1) 均匀随机数；精确解码会用同一个 u 与 min(1, {t}/{d}) 比较。"),
    "col.drafted": "草稿",
    "col.bars": "{d}(x)、{t}(x)，对数刻度",
    "col.ratio": "比值",
    "col.rule": "u &lt; min(1, {t}/{d}) 则接受",
    "col.rule_mentored": "u &lt; 接受概率 则接受",
    "col.rule_greedy": "argmax 检验",
    "col.verdict": "判定",
    "verdict.accepted": "接受",
    "verdict.rejected": "拒绝",
    "greedy.test": "目标模型 argmax {token}：{agrees}",
    "greedy.agrees": "一致",
    "greedy.differs": "不一致",
    "mentored.rest": "· 精确 {e} · KL {kl}/{budget}",
    "mentored.exact_rejects": "精确解码在这里会拒绝",
    "mentored.exact_accepts": "精确解码在这里会接受",
    "skipped": "位置 {span}（{tokens}）：未检验，前面的草稿已被拒绝",
    "correct.bonus": "<b>3. 修正</b> — {g} 个草稿全部被接受，而这次目标前向计算已经算出了下一个位置的分布 {t}：从中直接采样出<b>额外 token</b> {token}，无需再做前向计算。",
    "correct.resampled": "<b>3. 修正</b> — 位置 {pos} 被拒绝：从 {source} <b>重采样</b>得到 {token}{why}。",
    "correct.lookup_none": "<b>3. 修正</b> — 没有需要验证的草稿：这一次目标前向直接从 {t} 中采样出 {token}，与只用目标模型的解码相同。",
    "why.mentored": "，即 mentored 重采样分布",
    "why.greedy": "：温度为 0 时就是目标模型的 argmax",
    "why.residual": "，即残差分布：目标模型想要、而草稿模型给得不够的那部分概率",
    "source.mentored": "mentored s",
    "top_of": "{source} 中概率最高的几项：",
    "exact_prob": "精确 {x}",
    "sum.kept": "第 {n} 步：起草 {g} 个，接受 {k} 个",
    "sum.kept_all": "第 {n} 步：起草 {g} 个，全部 {g} 个被接受",
    "sum.resampled": "从残差分布重采样得到 {token}",
    "sum.resampled_greedy": "目标模型的 argmax {token} 替换了第 {pos} 个草稿",
    "sum.resampled_mentored": "从 mentored 分布 s 重采样得到 {token}",
    "sum.bonus": "目标模型给出额外 token {token}",
    "sum.result": "1 次目标前向计算产出 {k} 个 token",
    "sum.exact_would": "精确解码在位置 {where} 会作出不同决定",
    "sum.lossy": "有损",
    "p.semicolon": "；",
    "p.colon": "：",
    "p.period": "。",
    "sum.empty": "每按一次单步，这里用一句话说明这一步做了什么。",
    "nar.empty": "*还没有内容：请按**单步**。*",
    "nar.draft": "**1. 起草**：草稿模型提出了 {g} 个 token：{tokens}。",
    "nar.verify": "**2. 验证**：目标模型用一次前向计算给它们全部打分。",
    "nar.skipped": "- {token}：未检验，前面的 token 已被拒绝。",
    "nar.greedy": ("- {token}：温度为 0 时两个模型都确定自己的 argmax；目标模型的 argmax 是 {argmax}，"
                   "所以两者 {agree}：**{verdict}**。"),
    "nar.agree": "一致",
    "nar.differ": "不一致",
    "nar.mentored_chance": ("mentored 接受概率 {m}（精确解码：min(1, {t}/{d}) = {e}；此处花费的 KL 为 {kl}，"
                            "预算为 {budget}）"),
    "nar.row": ("- {token}：草稿模型给出 {d} = {q}，目标模型给出 {t} = {p}；均匀随机数 u = {u} {cmp} "
                "{chance}：**{verdict}**。"),
    "nar.correct_mentored": ("**3. 修正**：位置 {pos} 被拒绝，所以 {token} 是从 mentored decoding 的重采样分布 s 中抽取的（"
                             "代替精确的残差分布 norm(max(0, {t} − {d}))）；s 偏向目标模型评分远高于草稿模型的 token。"),
    "nar.correct_resampled": ("**3. 修正**：位置 {pos} 被拒绝，所以从残差分布 norm(max(0, {t} − {d})) 中重采样了替代 token "
                              "{token}；该分布只在目标模型想要的概率多于草稿模型所给之处才有概率质量。"),
    "nar.correct_bonus": "**3. 修正**：所有草稿 token 都被接受，所以目标模型在下一个位置的分布（已经算好）直接给出了额外 token {token}，无需再做前向计算。",
    "nar.total": "这一步**一次目标前向计算产出了 {k} 个 token**（{a} 个被接受 + 1 个{kind}）。",
    "nar.lossy": "*Mentored decoding（KL 预算 {budget} nats）：有损，输出在每个位置可与目标分布相差至多该 KL。*",
    "nar.note": "*注：{note}。*",
    "kind.resampled": "重采样 token",
    "kind.bonus": "额外 token",
    "chip.title": "第 {n} 步：{verdict}（按 Enter 查看该步）",
    "legend.hint": "点击 token 或用 Tab + Enter 查看它所在的步",
    "verdict.resampled": "重采样",
    "verdict.bonus": "额外 token",
    "cnt.empty": "第一步之后显示计数。",
    "cnt.speculative": "推测解码",
    "cnt.target_only": "仅目标模型",
    "cnt.tokens": "token 数",
    "cnt.target_passes": "目标模型前向次数",
    "cnt.draft_passes": "草稿模型前向次数",
    "cnt.tokens_per_s": "token / 秒",
    "cnt.argument": ("目标模型前向次数：推测解码 <b>{spec}</b> 次 vs 仅目标模型 <b>{base}</b> 次 · 每次目标前向 <b>{tpp}</b> 个 token · "
                     "{speed}"),
    "cnt.speedup": "<b>加速比 ×{s} ± {se}</b>",
    "cnt.warming": "加速比：预热中（{n}/{need} 步）",
    "cnt.alpha": "α（接受数 / 检验数）<b>{a}</b> · 平均接受长度 <b>{m}</b>",
    "cnt.lossy": "有损运行 vs 精确基线",
    "cnt.warming_long": "<b>加速比</b>：预热中（双方各有 {need} 次前向后才计时；现在 {n} 步）",
    "cnt.measured": "<b>加速比 ×{s} ± {se}</b>，在此实测（{device}）；定理 3.8 对 α = {a}、c = {c} 预测 ×{pred}；最佳 γ {best}",
    "kl.buys": "精确（KL 0）：此处接受率 {exact} · KL {kl} 时：{mentored}",
    "kl.exact": "KL 0：精确推测采样（无损）",
    "kl.none": "第一次单步后显示每个预算换来的接受率",
    "dbg.empty": "第一步之后显示指标。",
    "msg.reset": "已重置：下一次单步开始新的运行。",
    "msg.settings_changed": "设置已更改：已用新设置开始新的运行。",
    "msg.finished": "生成结束（EOS 或达到最大生成 token 数）。",
    "msg.graphs_captured": "已为两个模型捕获 CUDA Graph，用时 {s} 秒（每次运行一次，在第一次计时的单步之前）。",
    "msg.caches_rebuilt": "此运行的 KV 缓存曾为其他运行或模型对释放（内存由所有访问者共享），已先根据其 token 重建，用时 {s} 秒（不计入本步的计时）。",
    "msg.cannot_step": "无法用这些设置运行（{detail}）",
    "msg.done_reset": "生成已结束：请按重置（或更改某项设置）重新开始",
    "msg.models_failed": "模型运行失败：{detail}",
    "msg.sweep_first": "请先单步：温度扫描在当前运行的上下文上进行",
    "msg.sweep_zerogpu": "ZeroGPU 上不提供温度扫描",
    "msg.sweep_failed": "温度扫描失败：{detail}",
    "fig.empty": "按“单步”开始起草并验证",
}

JA = {
    "title": "specviz — 投機的デコーディングを一歩ずつ",
    "tab.live": "実モデル",
    "tab.playground": "プレイグラウンド：証明",
    "btn.step": "ステップ",
    "btn.play": "再生",
    "btn.pause": "一時停止",
    "btn.reset": "リセット",
    "lbl.lang": "言語",
    "lbl.classroom": "授業モード",
    "lbl.reveal": "フェーズごとに表示",
    "lbl.prompt": "プロンプト",
    "lbl.examples": "プロンプトの例",
    "lbl.preset": "モデルの組",
    "lbl.gamma": "γ：1 ステップあたりのドラフトトークン数",
    "lbl.drafter": "ドラフトの出し方：ターゲットモデルが検証するトークンを誰が提案するか",
    "drafter.model": "ドラフトモデル",
    "drafter.lookup": "プロンプトルックアップ（プロンプトと出力からコピー；モデルなし）",
    "lbl.drafts": "k：1 ステップのドラフト数（> 1：k 本の系列をトークン木として検証）",
    "lbl.temperature": "温度（0 = 貪欲デコーディング）",
    "lbl.kl": "KL 予算（0 = 厳密；> 0 = mentored decoding：近似、出力分布が変わる）",
    "lbl.kl_scale": "対数目盛の KL 予算（左端 = 0、厳密）",
    "lbl.notation": "記法",
    "lbl.more": "その他の設定",
    "lbl.top_k": "top-k（0 = オフ）",
    "lbl.top_p": "top-p（1 = オフ）",
    "lbl.seed": "この実行の乱数シード",
    "lbl.max_new": "最大生成トークン数",
    "lbl.speed": "再生：1 ステップの秒数",
    "lbl.own_pair": "自分のモデルの組（hub の id またはローカルフォルダ；プリセットの代わり）",
    "lbl.draft_model": "ドラフトモデル",
    "lbl.target_model": "ターゲットモデル",
    "lbl.show_rejected": "棄却されたドラフトを表示（取り消し線）",
    "lbl.view_step": "表示中のステップ",
    "lbl.details": "分布の全体と文章による説明",
    "lbl.history": "これまでの実行",
    "lbl.debug": "採用率のデバッグ：指標、棄却の一覧、温度スイープ、エクスポート",
    "lbl.rejections": "すべての棄却（行をクリックするとそのステップを表示）",
    "btn.sweep": "現在の文脈で温度スイープ",
    "btn.export": "実行をエクスポート",
    "lbl.json": "トレース（JSON）",
    "lbl.csv": "トークン（CSV）",
    "pg.intro": ("名前の付いた少数のトークン上の二つの分布、モデルなし：投機的サンプリングの出力がなぜターゲットの分布と"
                 "**まったく同じ**になるのか、よくある二つの近道がどこで間違うのかを見てください。重みは正規化されます。"),
    "pg.preset": "プリセット",
    "pg.tokens": "トークン名（カンマ区切り）",
    "pg.target": "ターゲットの重み",
    "pg.draft": "ドラフトの重み",
    "pg.samples": "ラウンド数",
    "pg.seed": "乱数シード",
    "pg.run": "実行",
    "pg.kl": "mentored decoding：KL 予算（nats）",
    "what": ("<b>画面の説明。</b>小さな<b>ドラフトモデル</b>が γ 個のトークンを推測し、大きな<b>ターゲットモデル</b>が<b>1 "
             "回</b>の順伝播ですべてを検査します。出てくるテキストはターゲット自身のサンプルと<b>まったく同じ</b>分布に従い、ターゲットの順伝"
             "播 1 回ごとに（採用されたドラフト数 + 1）個のトークンが得られます。"),
    "intro": ("小さな**ドラフトモデル**が γ 個のトークンを推測し、大きな**ターゲットモデル**が**1 回**の順伝播ですべてを検査します。一様"
              "乱数 u が min(1, {t}/{d}) を下回れば推測を採用し、最初に棄却された位置では*残差分布* norm(max(0, {t}"
              " − {d})) からサンプリングし直します。すべて採用されれば、ターゲットが*ボーナストークン*を追加します。出力はターゲット単独でサン"
              "プリングした場合と**まったく同じ**分布に従います（温度 0 では「argmax が一致する間ドラフトを残す」に帰着します）。それでいて"
              "ターゲットの順伝播 1 回で複数のトークンが得られます。"),
    "keys": "キー：<kbd>s</kbd> ステップ、<kbd>p</kbd> 再生/一時停止；Tab でトークンを選び Enter でそのステップを表示。",
    "card.empty": ("<b>ステップ</b><span class=\"key-hint\">（または <kbd>s</kbd> キー）</span>を押すと "
                   "1 ステップ実行します：ドラフトモデルが γ 個のトークンを提案し、ターゲットモデルが 1 回の順伝播ですべてを検査し、1 個のトークンを"
                   "修正または追加します。"),
    "card.step": "ステップ {n}",
    "card.viewing": "（表示中；最新はステップ {total}）",
    "card.tokens_from_pass": "ターゲットの順伝播 1 回で {k} トークン",
    "badge.exact": "厳密",
    "badge.greedy": "貪欲デコーディング（T = 0）",
    "badge.lossy": "近似：mentored decoding、KL 予算 {kl}",
    "card.lookup": ("<b>1. ドラフト</b> — プロンプトルックアップ（ドラフトモデルなし）：最後の {n} トークンが{where}に以前"
                    "出現しているので、その後の {g} トークンをコピー：{source}。{d} は one-hot：コピーしたトークンは "
                    "{d}(x) = 1 なので、受理確率 min(1, {t}(x)/1) は {t}(x)。"),
    "card.lookup_none": ("<b>1. ドラフト</b> — プロンプトルックアップ：最後のトークンは{where}のどこにも以前出現しないので、"
                         "コピーするものがない。このラウンドはターゲットモデル 1 回の計算で、トークンは {t} からサンプリング"
                         "（ターゲットモデルだけのデコードと同じ）。"),
    "lookup.prompt": "プロンプト",
    "lookup.output": "これまでの出力",
    "lookup.context": "プロンプトと出力",
    "chance.lookup": "min(1, {t}/1) = {t}(x) = ",
    "why.lookup": "：コピーしたトークンを除いて正規化し直した {t}（{d} は one-hot）",
    "sum.lookup_none": "ステップ {n}：以前の一致がなく、何もコピーしない",
    "nar.lookup": ("**1. ドラフト（プロンプトルックアップ）**：最後の {n} トークン {ngram} が{where}に以前出現した；その後の "
                   "{g} トークンをコピー：{tokens}。コピーは確定的で {d}(x) = 1 なので、各トークンは確率 {t}(x) で受理され、"
                   "棄却されたら代わりはそのトークンを除いた {t} からサンプリングされる。"),
    "nar.lookup_none": ("**1. ドラフト（プロンプトルックアップ）**：最後のトークンは{where}に以前出現しない：コピーするものが"
                        "なく、このラウンドはターゲットモデル 1 回の計算だけ。"),
    "card.draft": "<b>1. ドラフト</b> — ドラフトモデルが {g} 個サンプリング：{tokens}",
    "card.draft_reads": ("このドラフトモデルは、ターゲットモデルが計算済みの位置（検証済みの最後のトークンまで）"
                         "ではその最終層の隠れ状態を、いまドラフトしている位置では自分で予測した隠れ状態を読みます（EAGLE 方式）。"
                         "読むものが変えるのは {d} だけで、検証ステップにより出力の分布はターゲットモデルと完全に同じままです。"
                         ""),
    "card.verify": ("<b>2. 検証</b> — ターゲットが 1 回の順伝播ですべてを評価。u &lt; min(1, {t}(x)/{d}(x)) ならド"
                    "ラフト x を採用。<b>u</b> は位置ごとに新しく引く [0, 1) の一様乱数です。"),
    "card.verify_greedy": "<b>2. 検証</b> — ターゲットが 1 回の順伝播ですべてを評価。T = 0 では両モデルとも確定的：ドラフトがターゲットの argmax である間は採用（乱数なし）。",
    "card.verify_mentored": ("<b>2. 検証</b> — ターゲットが 1 回の順伝播ですべてを評価。u &lt; mentored の採用確率 なら採用。<b>u<"
                             "/b> は新しく引く [0, 1) の一様乱数；厳密なデコーディングなら同じ u を min(1, {t}/{d}) と比べます。"),
    "col.drafted": "ドラフト",
    "col.bars": "{d}(x)、{t}(x)、対数目盛",
    "col.ratio": "比",
    "col.rule": "u &lt; min(1, {t}/{d}) なら採用",
    "col.rule_mentored": "u &lt; 採用確率 なら採用",
    "col.rule_greedy": "argmax の検査",
    "col.verdict": "判定",
    "verdict.accepted": "採用",
    "verdict.rejected": "棄却",
    "greedy.test": "ターゲットの argmax {token}：{agrees}",
    "greedy.agrees": "一致",
    "greedy.differs": "不一致",
    "mentored.rest": "· 厳密 {e} · KL {kl}/{budget}",
    "mentored.exact_rejects": "厳密なデコーディングならここで棄却",
    "mentored.exact_accepts": "厳密なデコーディングならここで採用",
    "skipped": "位置 {span}（{tokens}）：未検査（それより前のドラフトが棄却されたため）",
    "correct.bonus": ("<b>3. 修正</b> — {g} 個のドラフトがすべて採用されたので、ターゲットの順伝播で次の位置の分布 {t} もすでに得られている"
                      "：追加の順伝播なしで<b>ボーナストークン</b> {token} を得る。"),
    "correct.resampled": "<b>3. 修正</b> — 位置 {pos} が棄却された：{source} から {token} を<b>サンプリングし直した</b>{why}。",
    "correct.lookup_none": "<b>3. 修正</b> — 検査するドラフトはない：1 回のターゲットの順伝播で {t} から {token} をサンプリングする（ターゲットモデルだけのデコードと同じ）。",
    "why.mentored": "（mentored の再サンプリング分布）",
    "why.greedy": "（温度 0 ではターゲットの argmax）",
    "why.residual": "（残差分布：ドラフトが与えた以上にターゲットが望む確率質量）",
    "source.mentored": "mentored s",
    "top_of": "{source} の上位：",
    "exact_prob": "厳密 {x}",
    "sum.kept": "ステップ {n}：ドラフト {g} 個中 {k} 個を採用",
    "sum.kept_all": "ステップ {n}：ドラフト {g} 個をすべて採用",
    "sum.resampled": "残差分布から {token} をサンプリングし直した",
    "sum.resampled_greedy": "ターゲットの argmax {token} が {pos} 番目のドラフトを置き換えた",
    "sum.resampled_mentored": "mentored 分布 s から {token} をサンプリングし直した",
    "sum.bonus": "ターゲットからボーナストークン {token}",
    "sum.result": "ターゲットの順伝播 1 回で {k} トークン",
    "sum.exact_would": "厳密なデコーディングなら位置 {where} で判定が異なった",
    "sum.lossy": "近似",
    "p.semicolon": "；",
    "p.colon": "：",
    "p.period": "。",
    "sum.empty": "ステップのたびに、そのステップで何が起きたかをここに 1 文で表示します。",
    "nar.empty": "*まだ何もありません：**ステップ**を押してください。*",
    "nar.draft": "**1. ドラフト**：ドラフトモデルが {g} 個のトークンを提案：{tokens}。",
    "nar.verify": "**2. 検証**：ターゲットが 1 回の順伝播でそのすべてを評価。",
    "nar.skipped": "- {token}：未検査（それより前のトークンが棄却されたため）。",
    "nar.greedy": ("- {token}：温度 0 では両モデルとも argmax が確定；ターゲットの argmax は {argmax} なので、"
                   "argmax は{agree}：**{verdict}**。"),
    "nar.agree": "一致",
    "nar.differ": "不一致",
    "nar.mentored_chance": "mentored の採用確率 {m}（厳密なデコーディング：min(1, {t}/{d}) = {e}；ここで使った KL は予算 {budget} のうち {kl}）",
    "nar.row": ("- {token}：ドラフトは {d} = {q}、ターゲットは {t} = {p}；一様乱数 u = {u} {cmp} {chance}："
                "**{verdict}**。"),
    "nar.correct_mentored": ("**3. 修正**：位置 {pos} が棄却されたので、{token} を mentored decoding の再サンプリング分布 s "
                             "から引いた。s はターゲットがドラフトよりずっと高く評価するトークンに寄っており、厳密な残差分布 norm(max(0, {t} − {d"
                             "})) の代わりに使われる。"),
    "nar.correct_resampled": ("**3. 修正**：位置 {pos} が棄却されたので、代わりのトークン {token} を残差分布 norm(max(0, {t} − "
                              "{d})) からサンプリングし直した。この分布は、ドラフトが与えた以上にターゲットが望むところだけに確率質量を持つ。"),
    "nar.correct_bonus": "**3. 修正**：すべてのドラフトが採用されたので、次の位置のターゲットの分布（計算済み）から追加の順伝播なしでボーナストークン {token} が得られた。",
    "nar.total": "このステップは**ターゲット 1 回の順伝播で {k} トークン**を出力（採用 {a} + {kind} 1）。",
    "nar.lossy": "*Mentored decoding（KL 予算 {budget} nats）：近似であり厳密ではない。各位置で出力はターゲットの分布から最大でその KL だけ離れうる。*",
    "nar.note": "*注：{note}。*",
    "kind.resampled": "再サンプリング",
    "kind.bonus": "ボーナス",
    "chip.title": "ステップ {n}：{verdict}（Enter でそのステップを表示）",
    "legend.hint": "トークンをクリック、または Tab + Enter でそのステップを表示",
    "verdict.resampled": "再サンプリング",
    "verdict.bonus": "ボーナス",
    "cnt.empty": "最初のステップの後にカウンターが表示されます。",
    "cnt.speculative": "投機的",
    "cnt.target_only": "ターゲットのみ",
    "cnt.tokens": "トークン数",
    "cnt.target_passes": "ターゲットの順伝播回数",
    "cnt.draft_passes": "ドラフトの順伝播回数",
    "cnt.tokens_per_s": "トークン / 秒",
    "cnt.argument": "ターゲットの順伝播回数：投機的 <b>{spec}</b> 回 vs ターゲットのみ <b>{base}</b> 回 · 1 回あたり <b>{tpp}</b> トークン · {speed}",
    "cnt.speedup": "<b>高速化率 ×{s} ± {se}</b>",
    "cnt.warming": "高速化率：ウォームアップ中（{n}/{need} ステップ）",
    "cnt.alpha": "α（採用数 / 検査数）<b>{a}</b> · 平均採用長 <b>{m}</b>",
    "cnt.lossy": "近似の実行 vs 厳密なベースライン",
    "cnt.warming_long": "<b>高速化率</b>：ウォームアップ中（両方式とも {need} 回順伝播してから計測；現在 {n} ステップ）",
    "cnt.measured": ("<b>高速化率 ×{s} ± {se}</b>（ここで実測、{device}）；"
                     "定理 3.8 の予測は α = {a}、c = {c} で ×{pred}；最適な γ {best}"),
    "kl.buys": "厳密（KL 0）：ここでの採用率 {exact} · KL {kl} では：{mentored}",
    "kl.exact": "KL 0：厳密な投機的サンプリング（分布は変わらない）",
    "kl.none": "各予算で得られる採用率は最初のステップの後に表示されます",
    "dbg.empty": "最初のステップの後に指標が表示されます。",
    "msg.reset": "リセットしました：次のステップで新しい実行が始まります。",
    "msg.settings_changed": "設定が変わったので、新しい設定で実行を始めました。",
    "msg.finished": "生成が終了しました（EOS または最大生成トークン数に到達）。",
    "msg.graphs_captured": "両モデルの CUDA Graph を {s} 秒でキャプチャしました（実行ごとに一度、最初に計時するステップの前）。",
    "msg.caches_rebuilt": "この実行の KV キャッシュは他の実行やモデルペアのために解放されていたため（メモリは全訪問者で共有）、まずトークンから {s} 秒で再構築しました（このステップの計時には含みません）。",
    "msg.cannot_step": "この設定では実行できません（{detail}）",
    "msg.done_reset": "生成は終了しました：リセットを押す（または設定を変える）と最初から始まります",
    "msg.models_failed": "モデルの実行に失敗しました：{detail}",
    "msg.sweep_first": "先にステップを押してください：スイープは現在の実行の文脈で行います",
    "msg.sweep_zerogpu": "ZeroGPU ではスイープを使えません",
    "msg.sweep_failed": "スイープに失敗しました：{detail}",
    "fig.empty": "ステップを押すとドラフト生成と検証を行います",
}

CATALOGUE = {"en": {**EN, **views.EN}, "zh": {**ZH, **views.ZH}, "ja": {**JA, **views.JA}}
