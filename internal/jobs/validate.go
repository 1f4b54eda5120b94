package jobs

import (
	"net/url"
	"slices"
	"strings"

	"golang.org/x/text/language"
)

// The rules a service's validate combines; each returns nil or the
// field's error.

// firstError returns the first failed rule.
func firstError(errs ...*FieldError) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func required(v, pointer string) *FieldError {
	if strings.TrimSpace(v) == "" {
		return invalid(pointer, "is required")
	}
	return nil
}

func requiredWhen(cond bool, v, pointer, when string) *FieldError {
	if cond && strings.TrimSpace(v) == "" {
		return invalid(pointer, "is required %s", when)
	}
	return nil
}

func forbiddenWhen(cond bool, v, pointer, when string) *FieldError {
	if cond && v != "" {
		return invalid(pointer, "is not allowed %s", when)
	}
	return nil
}

func oneOf(v, pointer string, isRequired bool, allowed ...string) *FieldError {
	if v == "" {
		if isRequired {
			return invalid(pointer, "is required (one of %s)", strings.Join(allowed, ", "))
		}
		return nil
	}
	if !slices.Contains(allowed, v) {
		return invalid(pointer, "must be one of %s, not %q", strings.Join(allowed, ", "), v)
	}
	return nil
}

// priority checks options.priority.
func priority(v string) *FieldError {
	return oneOf(v, ptrOptions+"/priority", false, "low", "standard", "high")
}

func mediaURL(v, pointer string, isRequired bool) *FieldError {
	if v == "" {
		if isRequired {
			return invalid(pointer, "is required")
		}
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid(pointer, "must be an absolute http or https URL")
	}
	return nil
}

func nonNegative(v *int, pointer string) *FieldError {
	if v != nil && *v < 0 {
		return invalid(pointer, "must be a zero-based track number (0 or more)")
	}
	return nil
}

func unitInterval(v *float64, pointer string) *FieldError {
	if v != nil && (*v < 0 || *v > 1) {
		return invalid(pointer, "must be between 0 and 1")
	}
	return nil
}

// languageCode checks a BCP 47 language tag; allowAuto admits "auto".
func languageCode(v, pointer string, allowAuto bool) *FieldError {
	if v == "" || (allowAuto && v == "auto") {
		return nil
	}
	// x/text also accepts "en_US"; BCP 47 separates subtags with hyphens.
	if _, err := language.Parse(v); err != nil || strings.Contains(v, "_") {
		if allowAuto {
			return invalid(pointer, "must be a BCP 47 language code such as en or pt-BR, or auto")
		}
		return invalid(pointer, "must be a BCP 47 language code such as en or pt-BR")
	}
	return nil
}
