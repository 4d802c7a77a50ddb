// specviz's page script, given to gradio's launch(js=...): language, keys, chip clicks, phase reveal, scrolling.
() => {
  // 1. The labels' language: gradio translates component labels in the browser (svelte-i18n); its core
  //    module exports changeLocale, found among the loaded modules (specviz/app/gradio_internals.py pins it).
  window.specvizSetLocale = async (code) => {
    const url = performance.getEntriesByType('resource').map((e) => e.name).find((n) => /\/core-[\w-]+\.js(\?|$)/.test(n));
    if (!url) return;
    try {
      const core = await import(url);
      if (core.changeLocale) core.changeLocale(code === 'zh' ? 'zh-CN' : code);
    } catch (err) { /* labels stay in the browser's language */ }
  };
  const showStep = (chip) => {
    const input = document.querySelector('#view-step input');
    if (!chip || !input) return;
    input.value = chip.dataset.step;
    input.dispatchEvent(new Event('input', {bubbles: true}));
  };
  const visible = (el) => !!el && el.offsetParent !== null;
  // 2. A text field swallows keys; sliders, radios, checkboxes, buttons and a closed dropdown do not.
  const NOT_TEXT = ['range', 'radio', 'checkbox', 'button', 'submit', 'reset', 'color', 'file'];
  const textField = (t) => t.isContentEditable || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' ||
    (t.tagName === 'INPUT' && !NOT_TEXT.includes((t.type || 'text').toLowerCase()) &&
     !(t.getAttribute('role') === 'combobox' && t.getAttribute('aria-expanded') !== 'true'));
  // 3. Phase reveal (#reveal): a new card from Step starts hidden; each Step press shows the next part
  //    (Draft, the Verify heading, each row, Correct) before the next round runs.
  let pendingReveal = false, userStepped = false;
  const revealNext = () => {
    const hidden = [...document.querySelectorAll('#step-card .sv-hidden')];
    if (!hidden.length) return false;
    const first = hidden[0];
    first.classList.remove('sv-hidden');
    if (first.tagName !== 'TR') {
      for (const el of hidden.slice(1)) {
        if (el.tagName === 'TR' || el.dataset.phase !== first.dataset.phase) break;
        el.classList.remove('sv-hidden');
      }
    }
    return true;
  };
  // 3b. Predict mode (#predict): while the round on the card is being asked (#question[data-open="1"]), Step and
  //     its key do what the question's own Next button does (the server shows the decision unanswered, or moves
  //     to the next question); keys 1-4 press the choices. The server keeps the score and what is shown.
  const predicting = () => document.body.classList.contains('predict');
  const asking = () => predicting() && document.querySelector('#question[data-open="1"]');
  window.addEventListener('click', (e) => {
    if (!e.target.closest) return;
    if (e.target.closest('#step')) {
      document.body.classList.remove('sv-show-settings');
      const question = asking();
      if (question) {
        e.stopPropagation(); e.preventDefault();
        question.querySelector('[data-choice="next"]')?.click();
        return;
      }
      if (document.body.classList.contains('reveal') && !predicting() && revealNext()) {
        e.stopPropagation(); e.preventDefault(); markLine(); return;
      }
      pendingReveal = document.body.classList.contains('reveal') && !predicting();
      userStepped = true;
    }
    if (e.target.closest('#play') && document.body.classList.contains('classroom')) userStepped = true;
    showStep(e.target.closest('#timeline .chip'));
  }, true);
  document.addEventListener('keydown', (e) => {
    const chip = e.target.closest && e.target.closest('#timeline .chip');
    if (chip && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); showStep(chip); return; }
    if (textField(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
    if (['1', '2', '3', '4'].includes(e.key) && asking()) {
      const question = document.querySelector('#question[data-state="asking"]');
      const choice = question && question.querySelector(`[data-choice="${+e.key - 1}"]`);
      if (choice && visible(choice)) { e.preventDefault(); choice.click(); }
      else if (question) {  // a key past this question's choices (4 where there are two): the choices it has flash
        question.dataset.nochoice = e.key;
        setTimeout(() => { if (question.dataset.nochoice === e.key) delete question.dataset.nochoice; }, 900);
      }
      return;
    }
    const id = e.key === 's' ? '#step' : e.key === 'p' ? '#play' : null;
    const button = id && document.querySelector(id);
    if (!visible(button)) return;  // keys act only on the visible tab
    e.preventDefault();
    button.click();  // each press is one click: Step's clicks queue (trigger_mode "multiple")
  }, true);
  // 4a. Play never moves a page the reader has scrolled: keep the block at the middle of the window where it was
  //     while results above it change height (scroll anchoring loses nodes that gradio replaces).
  let anchor = null, anchorTop = 0;
  const STABLE = '#round-summary, #step-card, #counters, #timeline, #what-you-see, #debug, #settings, #results > *, .block';
  let ownScrollUntil = 0;  // our own scroll after a Step pins the round summary instead
  window.addEventListener('scroll', () => {
    if (performance.now() < ownScrollUntil) return;
    const hit = window.scrollY > 0 && document.elementFromPoint(window.innerWidth / 2, window.innerHeight / 2);
    anchor = hit && hit.closest ? hit.closest(STABLE) : null;
    anchorTop = anchor ? anchor.getBoundingClientRect().top : 0;
  }, {passive: true});
  const keepAnchor = () => {
    if (!anchor || !anchor.isConnected || userStepped) return;
    const delta = anchor.getBoundingClientRect().top - anchorTop;
    if (Math.abs(delta) > 0.5) window.scrollBy(0, delta);
  };
  // 3c. #algorithm: the version of the rule the card's data-algo names, and the line (aria-current="step") of the
  //     last part of the card shown (each part names its line in data-line): it follows the reveal and predict mode.
  const markLine = () => {
    const algo = document.querySelector('#algorithm');
    if (!algo) return;
    const card = document.querySelector('#step-card .card:not(.empty)');
    const rule = (card && card.dataset.algo) || 'exact';
    algo.querySelectorAll('ol[data-algo]').forEach((ol) => { ol.hidden = ol.dataset.algo !== rule; });
    const shown = card ? [...card.querySelectorAll('[data-line]')].filter((el) => !el.closest('.sv-hidden')) : [];
    const line = shown.length ? shown[shown.length - 1].dataset.line : 'draft';
    const lit = algo.querySelector(`ol[data-algo="${rule}"] [data-line="${line}"]`);
    algo.querySelectorAll('[aria-current]').forEach((el) => { if (el !== lit) el.removeAttribute('aria-current'); });
    if (lit && lit.getAttribute('aria-current') !== 'step') { lit.setAttribute('aria-current', 'step'); fitAlgorithm(); }
    // on a phone #algorithm lies under the card, behind the sticky question panel: the panel repeats the lit line
    // (page.css shows .q-line below 700 px); written only when it changes, so this observer does not wake itself
    const question = document.querySelector('#question[data-open="1"]');
    if (!question) return;
    const said = lit ? `${[...lit.parentElement.children].indexOf(lit) + 1}. ${lit.textContent.trim()}` : '';
    let echo = question.querySelector('.q-line');
    if (!echo) {
      echo = document.createElement('div');
      echo.className = 'q-line';
      echo.setAttribute('aria-hidden', 'true');  // #algorithm itself says it to a screen reader
      question.prepend(echo);
    }
    if (echo.textContent !== said) echo.textContent = said;
  };
  // 3e. Beside the card, #algorithm sticks under the controls (page.css). When the card shows a new part or a new
  //     question, or the window changes, its box is cut to end above the predict panel, which sticks to the window's
  //     bottom; as the page scrolls, only the box's own scroll moves, keeping the lit line in sight (nothing around
  //     it changes size while the reader scrolls).
  const fitAlgorithm = (resize = true) => {
    const algo = document.querySelector('#algorithm'), bar = document.querySelector('#controls');
    const panel = document.querySelector('#predict-panel');
    const barH = bar ? bar.offsetHeight : 0, panelH = panel && predicting() ? panel.offsetHeight : 0;
    if (resize) document.documentElement.style.setProperty('--sv-bar-h', `${barH}px`);
    if (!algo || !algo.offsetParent) return;
    const room = window.innerHeight - panelH - 8;  // the panel's top
    const card = document.querySelector('#step-card');
    const beside = card && algo.getBoundingClientRect().left >= card.getBoundingClientRect().right - 1;
    if (resize) {  // under the card (a narrow window) it keeps its whole height
      const top = Math.max(algo.getBoundingClientRect().top, barH + 4);
      const height = beside ? `${Math.max(160, Math.round(room - top))}px` : '';
      if (algo.style.maxHeight !== height) algo.style.maxHeight = height;
    }
    const lit = algo.querySelector('[aria-current="step"]');
    if (!lit) return;
    const a = algo.getBoundingClientRect(), l = lit.getBoundingClientRect();
    const top = Math.max(a.top, barH), bottom = Math.min(a.bottom, room);
    if (bottom - top < l.height) return;  // the box is out of sight (under the card on a narrow window)
    if (l.bottom > bottom) algo.scrollTop += l.bottom - bottom + 4;
    else if (l.top < top) algo.scrollTop -= top - l.top + 4;
  };
  let fitting = false;
  const fitSoon = (resize) => {
    if (fitting) return;
    fitting = true;
    requestAnimationFrame(() => { fitting = false; fitAlgorithm(resize); });
  };
  window.addEventListener('scroll', () => fitSoon(false), {passive: true});
  const sized = new ResizeObserver(() => fitSoon(true));
  ['#controls', '#predict-panel', '#card-row'].forEach((s) => { const el = document.querySelector(s); if (el) sized.observe(el); });
  // 3d. A new question brings the part it asks about above the panel (which sticks to the window's bottom), with
  //     room left for the answer's sentence, which grows the panel: answering then covers nothing it reveals (a bet
  //     or a myth, data-reveals="0", reveals no part now). The card's head shows too where it fits; where the card's
  //     top and the part cannot both show, the part wins; it never goes under the controls.
  const underControls = () => { const bar = document.querySelector('#controls'); return (bar ? bar.getBoundingClientRect().bottom : 0) + 4; };
  const ownScroll = (delta) => {  // our scroll: the card stays the anchor, and the scroll listener lets it be
    if (Math.abs(delta) > 0.5) window.scrollBy(0, delta);
    anchor = document.querySelector('#step-card'); anchorTop = anchor.getBoundingClientRect().top;
    ownScrollUntil = performance.now() + 400;
  };
  let askedKey = '';
  const keepAskedInView = () => {
    const question = asking(), card = document.querySelector('#step-card .card:not(.empty)');
    const key = question && card ? `${card.dataset.step}|${question.dataset.at}` : '';  // a new question, not an answer
    if (!key || key === askedKey) return;
    askedKey = key;
    // the last part shown, and the hidden part after it that the answer will show (its place is kept)
    const parts = [...card.querySelectorAll('[data-part]')].filter((el) => el.offsetHeight);
    const hidden = (el) => !!el.closest('.sv-hidden');
    const i = parts.map(hidden).lastIndexOf(false);
    const last = i >= 0 ? parts[i] : card, next = question.dataset.reveals === '0' ? null : parts.slice(i + 1).find(hidden);
    const nextAll = next ? parts.filter((el) => el.dataset.part === next.dataset.part) : [];  // e.g. Correct's two lines
    const panel = document.querySelector('#predict-panel'), top = underControls();
    const prompt = question.querySelector('.q-prompt');
    const line = prompt ? parseFloat(getComputedStyle(prompt).lineHeight) || 20 : 20;
    // the sentence an answer adds, and on the round's last question the bet it settles (a line longer on a phone)
    const settles = question.dataset.last === '1' && question.querySelector('.q-bet:not([data-result])') ? 1 : 0;
    const answer = line * ((question.dataset.kind === 'source' ? 4 : 2) + settles);
    const bottom = window.innerHeight - (panel ? panel.offsetHeight : 0) - answer - 4;
    const r = {top: last.getBoundingClientRect().top,
               bottom: Math.max(...[last, ...nextAll].map((el) => el.getBoundingClientRect().bottom))};
    // a scroll by delta fits the part when lo <= delta <= hi; the least such move (the part's top wins where none
    // fits), then as far up as the card's head needs while the part still fits
    const lo = r.bottom - bottom, hi = r.top - top, head = card.getBoundingClientRect().top - top;
    let delta = Math.min(Math.max(0, lo), hi);
    if (head - delta < 0) delta = Math.max(Math.min(delta, head), Math.min(lo, hi));
    ownScroll(delta);
    fitAlgorithm();
  };
  // 3e. An answer: a panel capped by a short window (page.css) scrolls to its end (the sentence, the bet, the way on;
  //     the answered choices scroll up out of it), and the part of the card it revealed comes above the panel where
  //     the room kept for it fell short (a window too short for it and the part before it), never under the controls
  let answeredKey = '';
  const showAnswer = () => {
    const question = document.querySelector('#question[data-result], #question[data-state="shown"]');
    const panel = document.querySelector('#predict-panel'), card = document.querySelector('#step-card .card');
    const key = question && card ? `${card.dataset.step}|${question.dataset.at}|${question.dataset.state}` : '';
    if (key === answeredKey) return;
    answeredKey = key;
    if (!key) return;
    if (panel.scrollHeight > panel.clientHeight + 1) panel.scrollTop = panel.scrollHeight;
    const parts = [...card.querySelectorAll('[data-part]')].filter((el) => el.offsetHeight && !el.closest('.sv-hidden'));
    const last = parts[parts.length - 1];
    if (!last) return;
    const revealed = parts.filter((el) => el.dataset.part === last.dataset.part);  // e.g. Correct's two lines
    const r = {top: Math.min(...revealed.map((el) => el.getBoundingClientRect().top)), bottom: last.getBoundingClientRect().bottom};
    const limit = panel.getBoundingClientRect().top - 4;
    if (r.bottom > limit) ownScroll(Math.max(0, Math.min(r.bottom - limit, r.top - underControls())));
  };
  // 4. After the reader's own Step (never a Play tick): keep the newest tokens in view inside their box, and
  //    on a phone, in classroom mode or when the card ends below the window (zoomed in), bring the round to the
  //    top of the window, under the sticky controls.
  new MutationObserver(() => {
    keepAnchor();
    markLine();
    keepAskedInView();
    showAnswer();
    const box = document.querySelector('#timeline .text-view');
    if (box && !box.querySelector('.selected:not(:last-child)')) box.scrollTop = box.scrollHeight;
    const card = document.querySelector('#step-card .card:not(.empty)');
    if (!card || card.dataset.seen === '1') return;
    card.dataset.seen = '1';
    if (pendingReveal) {
      card.querySelectorAll('[data-phase]').forEach((el) => el.classList.add('sv-hidden'));
      revealNext();
      pendingReveal = false;
      markLine();
    }
    const classroom = document.body.classList.contains('classroom');
    const below = card.getBoundingClientRect().bottom > window.innerHeight;  // e.g. at 150% or 200% zoom
    if (userStepped && (window.innerWidth < 700 || classroom || below) && document.activeElement?.id !== 'view-step') {
      // the round's top: its summary, or the card where predict mode puts the summary under it
      const top = classroom || below ? [...document.querySelectorAll('#round-summary, #card-row')]
        .filter((el) => el.getClientRects().length)  // predict mode hides the summary while it asks: no box, top 0
        .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)[0] : document.querySelector('#step-card');
      const bar = document.querySelector('#controls');
      if (top && bar) {
        window.scrollTo({top: top.getBoundingClientRect().top + window.scrollY - bar.offsetHeight - 4});
        anchor = top; anchorTop = top.getBoundingClientRect().top; ownScrollUntil = performance.now() + 400;
      }
    }
    userStepped = false;
  }).observe(document.body, {childList: true, subtree: true});
  // 5. Figures on a phone: the title wraps, the legend moves to the bottom of the figure (so it never covers the
  //    title) and side-by-side panels stack, each keeping its axis titles apart. Desktop figures are untouched.
  const phoneDone = new WeakMap();
  // A Chinese or Japanese character is about two Latin ones wide, and such text has no spaces to break at:
  // a run wider than a line is cut between characters.
  const wide = (s) => [...s].reduce((n, c) => n + (c >= '\u2e80' ? 2 : 1), 0);
  const pieces = (word, width) => {
    const out = [''];
    for (const c of word) {
      if (wide(out[out.length - 1] + c) > width) out.push('');
      out[out.length - 1] += c;
    }
    return out;
  };
  const wrap = (text, width) => {
    const lines = [];
    for (const word of String(text || '').replace(/<br>/g, ' ').split(' ').flatMap((w) => pieces(w, width))) {
      const last = lines.length - 1;
      if (last >= 0 && wide(lines[last] + ' ' + word) <= width) lines[last] += ' ' + word; else lines.push(word);
    }
    return lines;
  };
  // The widest line of a plotly text (lines split at <br>, tags left out), in the units `wide` counts.
  const widest = (text) => Math.max(...String(text || '').split('<br>').map((line) => wide(line.replace(/<[^>]*>/g, ''))));
  // Notes right of the plot area (each row's "u = … ✓ …") keep the right margin the figure gave them.
  const rightNotes = (L) => (L.annotations || []).some((a) => a.xanchor === 'left' && (a.xref || 'x') !== 'paper' && a.x >= 1);
  // Panels stacked over the full width (one per drafted position), each with a caption line above it: on a phone
  // a caption wraps, and the room above its panel grows by its lines (below the first panel that room also holds
  // the x labels of the panel above). Returns the new plot height and what the top margin must add.
  const wrapCaptions = (L, perLine, plotH, update) => {
    const lineH = 16, ticks = 100;  // ticks: a token's label turned upright, up to 12 characters
    const ys = Object.keys(L).filter((k) => /^yaxis\d*$/.test(k) && L[k] && L[k].domain)
      .sort((a, b) => L[b].domain[1] - L[a].domain[1]);
    const caps = ys.map((k) => {
      const i = (L.annotations || []).findIndex((a) => a.xref === 'paper' && a.yref === 'paper' && a.xanchor === 'left'
        && a.yanchor === 'bottom' && a.x <= 0.05 && Math.abs(a.y - L[k].domain[1]) < 1e-6);
      return i < 0 ? null : {i, lines: wrap(L.annotations[i].text, perLine)};
    });
    if (ys.length < 2 || !caps.some((c) => c && c.lines.length > 1)) return {plotH, top: 0};
    const span = (k) => L[k].domain[1] - L[k].domain[0];
    const gaps = ys.map((k, i) => (i === 0 ? 0 : Math.max(plotH * (L[ys[i - 1]].domain[0] - L[k].domain[1]),
      ticks + lineH * (caps[i] ? caps[i].lines.length : 0))));
    const total = ys.reduce((s, k, i) => s + plotH * span(k) + gaps[i], 0);
    let y = total;
    ys.forEach((k, i) => {
      y -= gaps[i];
      const top = y / total;
      y -= plotH * span(k);
      update[k + '.domain'] = [Math.max(y / total, 0), top];
      if (caps[i]) {
        update[`annotations[${caps[i].i}].y`] = top;
        update[`annotations[${caps[i].i}].text`] = caps[i].lines.join('<br>');
        update[`annotations[${caps[i].i}].align`] = 'left';
      }
    });
    return {plotH: total, top: caps[0] ? lineH * caps[0].lines.length : 0};
  };
  const phoneFigure = (el) => {
    const L = el.layout;
    if (!window.Plotly || !L || phoneDone.get(el) === el.data) return;
    phoneDone.set(el, el.data);
    const perLine = Math.max(24, Math.floor(el.clientWidth / 8));
    const title = wrap((L.title && L.title.text) || '', perLine);
        const pairs = Object.keys(L).filter((k) => /^xaxis\d*$/.test(k) && L[k] && L[k].domain && L[k].domain[1] - L[k].domain[0] < 0.9);
    const names = (el.data || []).map((t) => wrap(t.name, perLine - 6));
    const legendLines = (el.data || []).reduce((s, t, i) => s + (t.name && t.showlegend !== false ? names[i].length : 0), 0);
    const panel = 230, gapPx = 120, titleH = 18 * title.length + 16, legendH = 17 * legendLines + 10;
    const update = {'title.text': title.join('<br>'), 'title.font.size': 13, 'title.y': 1, 'title.yanchor': 'top',
      'title.yref': 'container', 'title.pad.t': 10, 'legend.orientation': 'h', 'legend.yref': 'container', 'legend.y': 0,
      'legend.yanchor': 'bottom', 'legend.x': 0, 'legend.font.size': 11, 'margin.t': titleH + 8,
      'margin.r': rightNotes(L) ? Math.max(10, (L.margin && L.margin.r) || 10) : 10};
    let plotH = (L.height || 360) - ((L.margin && L.margin.t) || 60) - ((L.margin && L.margin.b) || 50);
    if (pairs.length > 1) {  // stack the panels, top to bottom in their reading order
      const order = pairs.map((k) => [k, L['yaxis' + k.slice(5)]])
        .sort((a, b) => (b[1]?.domain?.[1] ?? 1) - (a[1]?.domain?.[1] ?? 1) || a[0][0].localeCompare(b[0][0]) || L[a[0]].domain[0] - L[b[0]].domain[0]);
      const n = order.length, gap = gapPx / (panel * n + gapPx * (n - 1));
      const h = (1 - gap * (n - 1)) / n;
      order.forEach(([x, y], i) => {
        const top = 1 - i * (h + gap);
        update[x + '.domain'] = [0, 1];
        if (y) update['yaxis' + x.slice(5) + '.domain'] = [Math.max(top - h, 0), top];
      });
      plotH = panel * n + gapPx * (n - 1);
      (L.annotations || []).forEach((a, i) => { if (a.yref === 'paper' && a.y > 0.9) update[`annotations[${i}].visible`] = false; });
    } else {
      const grown = wrapCaptions(L, perLine, plotH, update);
      plotH = grown.plotH;
      update['margin.t'] += grown.top;
    }
    const bottom = ((L.margin && L.margin.b) || 50) + legendH;
    update['margin.b'] = bottom;
    update.height = update['margin.t'] + plotH + bottom;
    if (names.some((lines, i) => lines.length > 1)) window.Plotly.restyle(el, {name: names.map((l) => l.join('<br>'))});
    window.Plotly.relayout(el, update).then(() => setTimeout(() => fitNotes(el), 300));  // after automargin's redraw
  };
  // A centred note still wider than the figure once laid out (a row's "not examined (…)" over the accept track)
  // wraps to the characters that fit, measured. (Captions and right notes are laid out above, not measured.)
  const fitNotes = (el) => {
    const svg = el.querySelector('svg.main-svg') && el.querySelector('svg.main-svg').getBoundingClientRect();
    const size = el._fullLayout && el._fullLayout._size, notes = (el.layout && el.layout.annotations) || [];
    if (!svg || !svg.width || !size) return;
    const box = {left: svg.left + size.l, right: svg.left + size.l + size.w};  // the plot area, where such a note sits
    const update = {};
    el.querySelectorAll('g.annotation[data-index]').forEach((g) => {
      const i = +g.getAttribute('data-index'), text = g.querySelector('.annotation-text'), r = text && text.getBoundingClientRect();
      if (!r || !r.width || !notes[i] || notes[i].xanchor === 'left') return;
      const room = r.width - Math.max(0, r.right - box.right) - Math.max(0, box.left - r.left) - 4;
      if (room >= r.width) return;
      const longest = widest(notes[i].text);
      const per = Math.floor(longest * room / r.width);  // r.width: the widest line's
      if (per >= 6) update[`annotations[${i}].text`] = wrap(notes[i].text, per).join('<br>');
    });
    if (Object.keys(update).length) window.Plotly.relayout(el, update);
  };
  // On a wider screen the legend sits between the title and the plot; longer names (a Chinese or Japanese
  // legend) can take more lines than the margin holds: the figure then grows by the overlap, measured.
  const fitted = new WeakMap();  // figure -> {data, tries}: measured for this data, and how often moved
  // A title wider than its figure (a Japanese residual title at 1280) wraps to the characters that fit, measured;
  // the top margin grows by its new lines.
  const titled = new WeakMap();  // figure -> the data whose title was fitted
  const fitTitle = async (el) => {
    const title = el.querySelector('.gtitle'), svg = el.querySelector('svg.main-svg'), L = el.layout;
    if (!window.Plotly || !L || !L.title || !title || !svg || titled.get(el) === el.data) return;
    const r = title.getBoundingClientRect(), box = svg.getBoundingClientRect();
    if (!r.width) return;  // not drawn yet
    titled.set(el, el.data);
    if (r.right <= box.right - 4) return;
    const text = String(L.title.text || ''), before = text.split('<br>').length;
    const longest = widest(text);
    const lines = wrap(text, Math.floor(longest * (box.right - 8 - r.left) / r.width));
    const grow = 19 * (lines.length - before), top = (L.margin && L.margin.t) || 100;
    await window.Plotly.relayout(el, {'title.text': lines.join('<br>'), 'margin.t': top + grow, height: (L.height || 450) + grow});
  };
  // Captions over stacked panels wider than the figure (853 px wide, a 1280 screen at 150%): wrapped to the width
  // they have, measured, the panels making room as on a phone (the first caption's one line already had room).
  const captioned = new WeakMap();  // figure -> the data whose captions were fitted
  const fitCaptions = async (el) => {
    const L = el.layout, svg = el.querySelector('svg.main-svg');
    if (!window.Plotly || !L || !L.annotations || !svg || captioned.get(el) === el.data) return;
    const drawn = [...el.querySelectorAll('g.annotation[data-index]')].map((g) => {
      const i = +g.getAttribute('data-index'), text = g.querySelector('.annotation-text');
      return {i, r: text ? text.getBoundingClientRect() : {width: 0}};
    }).filter(({i, r}) => r.width && L.annotations[i] && L.annotations[i].xref === 'paper' && L.annotations[i].xanchor === 'left');
    if (!drawn.length) return;  // none, or not drawn yet
    captioned.set(el, el.data);
    const box = svg.getBoundingClientRect(), worst = drawn.reduce((a, b) => (b.r.right > a.r.right ? b : a));
    if (worst.r.right <= box.right - 4) return;
    const longest = widest(L.annotations[worst.i].text);
    const top = (L.margin && L.margin.t) || 100, bottom = (L.margin && L.margin.b) || 40, update = {};
    const grown = wrapCaptions(L, Math.floor(longest * (box.right - 8 - worst.r.left) / worst.r.width),
      (L.height || 450) - top - bottom, update);
    if (!Object.keys(update).length) return;
    update['margin.t'] = top + Math.max(0, grown.top - 16);
    update.height = update['margin.t'] + grown.plotH + bottom;
    await window.Plotly.relayout(el, update);
  };
  const fitLegend = async (el) => {
    await fitTitle(el);
    await fitCaptions(el);
    const title = el.querySelector('.gtitle'), legend = el.querySelector('.legend'), L = el.layout;
    const state = fitted.get(el), tries = state && state.data === el.data ? state.tries : 0;
    if (!window.Plotly || !L || !title || !legend || tries >= 3) return;
    const t = title.getBoundingClientRect(), l = legend.getBoundingClientRect();
    if (!t.height || !l.height) return;  // not drawn yet (a closed accordion, a hidden tab): try again later
    const overlap = Math.ceil(t.bottom + 6 - l.top);
    fitted.set(el, {data: el.data, tries: overlap > 0 ? tries + 1 : 3});
    if (overlap <= 0) return;
    const size = el._fullLayout && el._fullLayout._size;  // the top margin in effect (plotly may have grown it)
    const top = (size && size.t) || (L.margin && L.margin.t) || 100;
    await window.Plotly.relayout(el, {'margin.t': top + overlap, height: (L.height || 450) + overlap});
    fitLegend(el);  // measured again
  };
  const phoneFigures = () => {
    const each = window.innerWidth >= 700 ? fitLegend : phoneFigure;
    document.querySelectorAll('.js-plotly-plot').forEach((el) => { try { each(el); } catch (err) { /* keep it */ } });
  };
  new MutationObserver(phoneFigures).observe(document.body, {childList: true, subtree: true});
  document.addEventListener('click', () => setTimeout(phoneFigures, 400));  // an accordion or a tab just opened
  // 6. The race (#race): both lanes on one clock. A token shows once the clock passes the time its side had it
  //    ready (data-ms); each lane's clock stops at its own total. A new race plays once; Replay plays it again
  //    (data-slow 10: at a tenth of the speed, the clocks still showing measured time).
  const playRace = (race, slow) => {
    const lanes = [...race.querySelectorAll('.race-lane')];
    const tokens = lanes.map((lane) => [...lane.querySelectorAll('.race-tok')]);
    const totals = lanes.map((lane) => +lane.dataset.totalMs || 0);
    const next = lanes.map(() => 0);
    tokens.flat().forEach((t) => t.classList.remove('shown'));
    race.querySelectorAll('.race-text').forEach((box) => { box.scrollTop = 0; });
    race.classList.add('playing');
    const start = performance.now(), id = String(start);
    race.dataset.playing = id;
    const frame = (now) => {
      if (race.dataset.playing !== id || !race.isConnected) return;
      const ms = (now - start) / slow;
      lanes.forEach((lane, i) => {
        const before = next[i];
        while (next[i] < tokens[i].length && +tokens[i][next[i]].dataset.ms <= ms) tokens[i][next[i]++].classList.add('shown');
        const box = lane.querySelector('.race-text'), last = tokens[i][next[i] - 1];
        if (box && last && next[i] > before) box.scrollTop = Math.max(0, last.offsetTop + last.offsetHeight - box.clientHeight);
        const clock = lane.querySelector('.race-clock');
        if (clock) clock.textContent = (Math.min(ms, totals[i]) / 1000).toFixed(2) + ' s';
      });
      if (ms <= Math.max(...totals)) requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  };
  new MutationObserver(() => {
    const race = document.querySelector('#race .race[data-race]');
    if (race && !race.dataset.played) { race.dataset.played = '1'; playRace(race, 1); }
  }).observe(document.body, {childList: true, subtree: true});
  document.addEventListener('click', (e) => {
    const button = e.target.closest && e.target.closest('#race .race-replay');
    if (button) playRace(button.closest('.race'), +button.dataset.slow || 1);
  });
  // A trace file is read here and sent as text (#trace-text): the server never stores an upload. Files over
  // the public bound are refused before reading; the server checks bytes and steps again.
  document.addEventListener('change', (e) => {
    const input = e.target;
    if (!input || input.id !== 'trace-file-input' || !input.files || !input.files[0]) return;
    const file = input.files[0];
    const send = (text) => {
      const box = document.querySelector('#trace-text textarea, #trace-text input');
      if (!box) return;
      // one or two trailing newlines, alternating: the same file opened again is still a change
      box.value = text + (box.value.endsWith('\n\n') ? '\n' : '\n\n');
      box.dispatchEvent(new Event('input', {bubbles: true}));
    };
    if (file.size > 20000000) { send('{"too_large_bytes": ' + file.size + '}'); input.value = ''; return; }
    file.text().then((text) => { send(text); input.value = ''; });
  });
  // 7. The misconceptions (#myths) answer here: the choice is marked, the right one shown, the explanation opened
  //    (nothing is sent). "Show me" opens the tab or accordion that holds the evidence, types the example it names
  //    and presses its button.
  document.addEventListener('click', (e) => {
    const choice = e.target.closest && e.target.closest('#myths .myth-choice');
    if (!choice) return;
    const myth = choice.closest('.myth'), list = choice.closest('.myths');
    if (myth.dataset.result) return;
    const right = choice.dataset.right === '1';
    myth.dataset.result = right ? 'right' : 'wrong';
    choice.classList.add('chosen');
    myth.querySelectorAll('.myth-choice[data-right="1"]').forEach((b) => b.classList.add('right'));
    myth.querySelector('.myth-mark').textContent = right ? list.dataset.rightText : list.dataset.wrongText;
    myth.querySelector('.myth-why').hidden = false;
  });
  document.addEventListener('click', (e) => {
    const see = e.target.closest && e.target.closest('#myths .myth-see, #question .myth-see');
    if (see) window.specvizShowMe(see);
  });
  document.body.dataset.specvizReady = '1';  // tests wait for this before pressing keys
}
