// specviz's page script, given to gradio's launch(js=...): chip clicks, keys, keeping the newest step in view.
() => {
  const showStep = (chip) => {
    const input = document.querySelector('#view-step input');
    if (!chip || !input) return;
    input.value = chip.dataset.step;
    input.dispatchEvent(new Event('input', {bubbles: true}));
  };
  document.addEventListener('click', (e) => showStep(e.target.closest('#timeline .chip')));
  document.addEventListener('keydown', (e) => {
    const chip = e.target.closest && e.target.closest('#timeline .chip');
    if (chip && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); showStep(chip); return; }
    const typing = ['INPUT', 'TEXTAREA', 'SELECT'].includes(e.target.tagName) || e.target.isContentEditable;
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    const click = (id) => document.querySelector(id)?.click();
    if (e.key === 's') click('#step');
    if (e.key === 'p') click('#play');
  });
  new MutationObserver(() => {  // keep the newest tokens in view inside the bounded text area
    const box = document.querySelector('#timeline .text-view');
    if (box && !box.querySelector('.selected:not(:last-child)')) box.scrollTop = box.scrollHeight;
    if (window.innerWidth < 700 && document.activeElement?.id !== 'view-step') {
      const card = document.querySelector('#step-card .card:not(.empty)');
      const bar = document.querySelector('#controls');
      if (card && bar && card.dataset.seen !== card.textContent.length.toString()) {
        card.dataset.seen = card.textContent.length.toString();
        window.scrollTo({top: card.getBoundingClientRect().top + window.scrollY - bar.offsetHeight - 4});
      }
    }
  }).observe(document.body, {childList: true, subtree: true});
}
