// "Show me" of a misconception (predict mode's myths, and a wrong answer's link): select the tab or open the
// accordion that holds the evidence, type the values the evidence needs, press its button, and keep the evidence in
// the window while the page around it settles. Given to gradio's launch(js=...) before page.js (app/server.py).
() => {
  let showing = 0;  // the latest 'show me' pressed: an earlier one's pending typing, pressing and scrolling stop
  window.specvizShowMe = (see) => {
    const mine = ++showing, latest = () => mine === showing;
    const opens = see.dataset.opens, tab = opens && document.getElementById(opens + '-button');
    const shown = document.getElementById(see.dataset.goto);
    if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();  // another tab: select it
    else if (opens && !tab && (!shown || shown.offsetParent === null)) {  // a closed accordion: open it
      document.querySelector(`#${opens} > .label-wrap`)?.click();
    }
    const fill = Object.entries(JSON.parse(see.dataset.fill || '{}'));
    const boxOf = (id) => document.querySelector(`#${id} textarea, #${id} input`);
    const type = () => fill.forEach(([id, value]) => {
      const box = boxOf(id);
      if (box.value !== value) { box.value = value; box.dispatchEvent(new Event('input', {bubbles: true})); }
    });
    // a tab or accordion opened just now mounts its boxes and button after its group: wait for all of them
    // (on a slow machine the group came first, the run was pressed on empty boxes: "No curve yet")
    const mounted = () => fill.every(([id]) => boxOf(id)) && (!see.dataset.press || document.getElementById(see.dataset.press));
    // press only once the typed values have held for a beat (a component mounting late can redraw its box empty)
    let checks = 0;
    const press = () => {
      if (!latest()) return;
      if (!fill.every(([id, value]) => boxOf(id)?.value === value) && ++checks < 10) { type(); setTimeout(press, 300); return; }
      document.getElementById(see.dataset.press)?.click();
    };
    // the reader's own move (a wheel, a touch, a key, a click) from the press on ends the scrolling: the page never
    // pulls back a reader who looked elsewhere, even before the evidence has mounted
    // body[data-showing] while it may still scroll: a script that drives the page (a test) waits for it to go
    let reader = false;
    const moves = ['wheel', 'touchstart', 'keydown', 'mousedown'];
    const readerMoved = () => { reader = true; };
    document.body.dataset.showing = String(mine);
    const stopListening = () => {
      moves.forEach((name) => window.removeEventListener(name, readerMoved));
      if (latest()) delete document.body.dataset.showing;
    };
    moves.forEach((name) => window.addEventListener(name, readerMoved, {once: true, passive: true}));
    let tries = 0;
    const go = () => {
      if (!latest()) return stopListening();
      const target = document.getElementById(see.dataset.goto);
      if (!target || !mounted()) { if (++tries < 100) setTimeout(go, 100); else stopListening(); return; }
      type();
      if (see.dataset.press) setTimeout(press, 300);
      // classroom mode hides the settings: the evidence there (the drafter switch) shows them until the next Step
      if (target.closest('#settings') && !target.offsetParent) document.body.classList.add('sv-show-settings');
      // an accordion just opened draws its figures after this: bring the evidence back where it moved or out of the
      // window, looking every 200 ms for 4 s (on a busy machine the page went on moving after the first 2 s; at 400 ms
      // a reader saw it jump away and back), until the reader moves
      let at = 0, looks = 0;
      const place = () => {  // its top just under the sticky controls (hidden on the playground's tab)
        const bar = document.querySelector('#controls');
        window.scrollTo({top: target.getBoundingClientRect().top + window.scrollY - (bar ? bar.offsetHeight : 0) - 8});
        at = target.getBoundingClientRect().top;
      };
      const watch = () => {
        // the reader moved, a later 'show me' took over, or the evidence left the page (a tab switch, a Step ending
        // classroom mode's settings): stop
        if (reader || !latest() || !target.isConnected || !target.getClientRects().length) return stopListening();
        const top = target.getBoundingClientRect().top;
        if (Math.abs(top - at) > 2 || top < 0 || top >= window.innerHeight) place();
        if (++looks < 20) setTimeout(watch, 200);
        else stopListening();
      };
      if (reader) return stopListening();
      setTimeout(watch, 200);
      place();
    };
    go();
  };
}
