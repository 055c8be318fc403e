// Enter in a field marked data-enter-clicks presses the button it names rather than the
// form's first one: a template name typed and confirmed with Enter saves the template
// instead of submitting the job. Browsers submit on the keypress that follows an
// unhandled keydown, so that is held back too.
function enterButton(e) {
  const id = e.key === "Enter" && e.target.dataset ? e.target.dataset.enterClicks : "";
  return id ? document.getElementById(id) : null;
}

document.addEventListener("keydown", (e) => {
  const button = enterButton(e);
  if (button) {
    e.preventDefault();
    button.click();
  }
});

document.addEventListener("keypress", (e) => {
  if (enterButton(e)) {
    e.preventDefault();
  }
});
