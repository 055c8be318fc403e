package handlers

import "context"

// noRates says whether no cost rate is set at all, so that every amount is nothing: a
// page or answer says so rather than show 0.00 as if it were the cost.
func (h *Handler) noRates(ctx context.Context) (bool, error) {
	rates, err := h.store.CostRates(ctx)
	return len(rates) == 0, err
}
