#include "ui/common/combo_box.h"

#include <QAbstractItemView>
#include <QComboBox>
#include <QStyle>
#include <QStyleOptionComboBox>

#include <algorithm>

namespace mirrorlab::ui {

// The list's delegate cannot be asked (Fusion's sizes menu items by the rectangle it is given, not
// by their text), so the width is the one QComboBox::AdjustToContents would give the box: the
// widest choice's text and icon, with the style's frame and arrow around it.
void fitPopupToChoices(QComboBox* combo) {
    int widest_text = 0;
    for (int i = 0; i < combo->count(); ++i) {
        int width = combo->fontMetrics().horizontalAdvance(combo->itemText(i));
        if (!combo->itemIcon(i).isNull()) width += combo->iconSize().width() + 4;
        widest_text = std::max(widest_text, width);
    }
    QStyleOptionComboBox option;
    option.initFrom(combo);
    option.editable = combo->isEditable();
    option.frame = combo->hasFrame();
    const int widest_box =
        combo->style()
            ->sizeFromContents(QStyle::CT_ComboBox, &option, QSize(widest_text, combo->fontMetrics().height()), combo)
            .width();
    QAbstractItemView* list = combo->view();
    list->setMinimumWidth(widest_box + list->style()->pixelMetric(QStyle::PM_ScrollBarExtent));
}

}  // namespace mirrorlab::ui
