#pragma once
// Combo boxes that may be narrower than their longest choice (they take the room their panel has,
// rather than widening a dock on a laptop screen) still list every choice whole when opened.

class QComboBox;

namespace mirrorlab::ui {

// Makes the list of `combo` at least as wide as its longest choice, in every style (Fusion widens
// it by itself, others do not). Call again after the choices change.
void fitPopupToChoices(QComboBox* combo);

}  // namespace mirrorlab::ui
