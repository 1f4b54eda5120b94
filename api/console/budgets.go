package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"
)

// budgetDoc is a budget as GET /v1/budgets shows it (docs/api.md,
// Budgets).
type budgetDoc struct {
	ID         string `json:"id"`
	Attributes struct {
		Application *string `json:"application"`
		APIKey      *string `json:"api_key"`
		Period      string  `json:"period"`
		Limit       struct {
			Amount   json.Number `json:"amount"`
			Currency string      `json:"currency"`
			Quantity json.Number `json:"quantity"`
			Unit     string      `json:"unit"`
		} `json:"limit"`
		Thresholds []int `json:"thresholds"`
		Current    struct {
			PeriodStart time.Time   `json:"period_start"`
			PeriodEnd   time.Time   `json:"period_end"`
			Settled     json.Number `json:"settled"`
			Reserved    json.Number `json:"reserved"`
			Remaining   json.Number `json:"remaining"`
			UsedPercent float64     `json:"used_percent"`
		} `json:"current"`
	} `json:"attributes"`
}

// budgetView is a budget on the page: its numbers and its bar, whose
// widths are percents of the limit (the SVG's viewBox is 100 wide).
type budgetView struct {
	budgetDoc
	Limit, Of           string // "250", "USD"
	SettledW, ReservedW float64
	ReservedX           float64
	Thresholds          []float64
	Aria                string
}

// budgetsPage is templates/budgets.html's data.
type budgetsPage struct {
	Budgets []budgetView
	Error   string
}

// budgets serves GET /console/budgets: GET /v1/budgets, each budget
// with a bar of settled and reserved against its limit.
func (c *Console) budgets(w http.ResponseWriter, r *http.Request, s *session) error {
	a, err := c.callAs(r, s, http.MethodGet, "/v1/budgets", nil, nil)
	if err != nil {
		return err
	}
	var p budgetsPage
	if a.Status != http.StatusOK {
		p.Error = a.message()
	} else {
		var list struct {
			Data []budgetDoc `json:"data"`
		}
		dec := json.NewDecoder(bytes.NewReader(a.Body))
		dec.UseNumber()
		if err := dec.Decode(&list); err != nil {
			return err
		}
		for _, b := range list.Data {
			p.Budgets = append(p.Budgets, budgetBar(b))
		}
	}
	c.render(w, a.Status, "budgets", layout{Title: "Budgets", Nav: "budgets", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

// budgetBar lays out b's bar: settled from 0, reserved after it, both
// cut at the limit; a mark at each threshold.
func budgetBar(b budgetDoc) budgetView {
	v := budgetView{budgetDoc: b, Limit: b.Attributes.Limit.Amount.String(), Of: b.Attributes.Limit.Currency}
	if v.Of == "" {
		v.Limit, v.Of = b.Attributes.Limit.Quantity.String(), b.Attributes.Limit.Unit
	}
	limit, _ := json.Number(v.Limit).Float64()
	settled, _ := b.Attributes.Current.Settled.Float64()
	reserved, _ := b.Attributes.Current.Reserved.Float64()
	share := func(x float64) float64 {
		if limit <= 0 {
			return 0
		}
		return math.Round(math.Min(math.Max(x/limit*100, 0), 100)*100) / 100
	}
	v.SettledW = share(settled)
	v.ReservedX = v.SettledW
	v.ReservedW = math.Max(share(settled+reserved)-v.SettledW, 0)
	for _, t := range b.Attributes.Thresholds {
		v.Thresholds = append(v.Thresholds, float64(t))
	}
	v.Aria = fmt.Sprintf("%s settled and %s reserved of %s %s (%g%% used)", b.Attributes.Current.Settled,
		b.Attributes.Current.Reserved, v.Limit, v.Of, b.Attributes.Current.UsedPercent)
	return v
}
