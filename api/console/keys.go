package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ai-job-gateway/gateway/app/apikeys"
	"github.com/ai-job-gateway/gateway/internal/jobs"
)

// keyDoc is an API key as GET /v1/api-keys shows it (docs/api.md, API
// keys); Secret only in POST /v1/api-keys's answer.
type keyDoc struct {
	ID         string             `json:"id"`
	Attributes apikeys.Attributes `json:"attributes"`
}

// keyForm is the create form's values.
type keyForm struct {
	Name    string
	Scopes  map[string]bool
	Expires string // YYYY-MM-DD, "" for never
}

// keysPage is templates/keys.html's data.
type keysPage struct {
	Keys []keyDoc
	// Scopes are the create form's checkboxes.
	Scopes []string
	Form   keyForm
	// Error is the API's refusal of the list; CreateError of the form.
	Error, CreateError string
	// Revoked names a key just revoked.
	Revoked string
}

// keyScopes are the scopes the create form offers: each service's read
// and write, reading usage and reading keys. A key never holds
// keys:write (docs/api.md, API keys).
func keyScopes() []string {
	var out []string
	for _, svc := range jobs.Services() {
		out = append(out, string(svc.ID)+":read", string(svc.ID)+":write")
	}
	return append(out, "usage:read", "keys:read")
}

// keys serves GET /console/keys: the tenant's keys and the create form.
func (c *Console) keys(w http.ResponseWriter, r *http.Request, s *session) error {
	return c.renderKeys(w, r, s, http.StatusOK, keysPage{Form: keyForm{Scopes: map[string]bool{}}, Revoked: notice(r, "revoked")})
}

// renderKeys lists the keys into p and renders it, at status unless the
// list is refused.
func (c *Console) renderKeys(w http.ResponseWriter, r *http.Request, s *session, status int, p keysPage) error {
	p.Scopes = keyScopes()
	a, err := c.callAs(r, s, http.MethodGet, "/v1/api-keys", nil, nil)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		p.Error = a.message()
		if status == http.StatusOK {
			status = a.Status
		}
	} else {
		list, err := decodeList[keyDoc](a.Body)
		if err != nil {
			return err
		}
		p.Keys = list.Data
	}
	c.render(w, status, "keys", layout{Title: "API keys", Nav: "keys", Tenant: s.Tenant, CSRF: s.CSRFToken, Page: p})
	return nil
}

// createKey serves POST /console/keys: POST /v1/api-keys with the form,
// then a page that shows the secret this once. The console keeps no
// copy; the page is not cached (Cache-Control: no-store).
func (c *Console) createKey(w http.ResponseWriter, r *http.Request, s *session) error {
	form := keyForm{Name: strings.TrimSpace(r.PostFormValue("name")), Scopes: map[string]bool{}, Expires: r.PostFormValue("expires")}
	attrs := map[string]any{"name": form.Name}
	scopes := []string{}
	offered := keyScopes()
	for _, scope := range r.PostForm["scopes"] {
		if slices.Contains(offered, scope) && !form.Scopes[scope] {
			form.Scopes[scope] = true
			scopes = append(scopes, scope)
		}
	}
	attrs["scopes"] = scopes
	if form.Expires != "" {
		day, err := time.Parse(time.DateOnly, form.Expires)
		if err != nil {
			return c.renderKeys(w, r, s, http.StatusUnprocessableEntity, keysPage{Form: form, CreateError: "The expiry must be a day, YYYY-MM-DD."})
		}
		attrs["expires_at"] = day.UTC().Format(time.RFC3339)
	}
	a, err := c.callAs(r, s, http.MethodPost, "/v1/api-keys", nil, map[string]any{"data": map[string]any{"type": "api-key", "attributes": attrs}})
	if err != nil {
		return err
	}
	if a.Status != http.StatusCreated {
		return c.renderKeys(w, r, s, a.Status, keysPage{Form: form, CreateError: a.message()})
	}
	doc, err := decodeData[keyDoc](a.Body)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	c.render(w, http.StatusCreated, "key-secret", layout{Title: "Key " + doc.Attributes.Name + " created", Nav: "keys",
		Tenant: s.Tenant, CSRF: s.CSRFToken, Page: doc})
	return nil
}

// revokeKey serves POST /console/keys/{id}/revoke: without confirm=yes,
// a page that says what revoking does and asks again; with it, DELETE
// /v1/api-keys/{id}, then the list.
func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request, s *session) error {
	id := r.PathValue("id")
	path := "/v1/api-keys/" + url.PathEscape(id)
	if r.PostFormValue("confirm") != "yes" {
		a, err := c.callAs(r, s, http.MethodGet, path, nil, nil)
		if err != nil {
			return err
		}
		if a.Status != http.StatusOK {
			c.problem(w, a.Status, s, "The gateway refused", a.message())
			return nil
		}
		doc, err := decodeData[keyDoc](a.Body)
		if err != nil {
			return err
		}
		c.render(w, http.StatusOK, "key-revoke", layout{Title: "Revoke key " + doc.Attributes.Name, Nav: "keys",
			Tenant: s.Tenant, CSRF: s.CSRFToken, Page: doc})
		return nil
	}
	a, err := c.callAs(r, s, http.MethodDelete, path, nil, nil)
	if err != nil {
		return err
	}
	if a.Status != http.StatusNoContent {
		c.problem(w, a.Status, s, "The gateway refused", a.message())
		return nil
	}
	http.Redirect(w, r, Path+"keys?"+url.Values{"revoked": {id}}.Encode(), http.StatusSeeOther)
	return nil
}
