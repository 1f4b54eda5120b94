package sandbox

import (
	"math"
	"strings"
)

// schemaInstance is a minimal JSON value (as encoding/json decodes one)
// that matches schema, an llm-task's response_format JSON schema
// (docs/api.md, LLM tasks). It reads const, enum, anyOf and oneOf (their
// first branch), type (its first), properties with required, items,
// prefixItems, minItems, minLength, minimum, exclusiveMinimum and
// maximum; for any other keyword it gives the simplest value.
func schemaInstance(schema any) any {
	budget := maxInstanceValues
	return boundedInstance(schema, &budget)
}

// maxInstanceValues bounds the values and characters of an instance: a
// schema asking for more (minItems, minLength) gets a smaller instance,
// which the output check then refuses, rather than the worker's memory.
const maxInstanceValues = 10_000

// boundedInstance is schemaInstance within *budget values.
func boundedInstance(schema any, budget *int) any {
	s, ok := schema.(map[string]any)
	if !ok {
		return nil // the schema true, or one the gateway would not compile
	}
	if v, ok := s["const"]; ok {
		return v
	}
	if values, ok := s["enum"].([]any); ok && len(values) > 0 {
		return values[0]
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if branches, ok := s[key].([]any); ok && len(branches) > 0 {
			return boundedInstance(branches[0], budget)
		}
	}
	switch schemaType(s) {
	case "object":
		object := map[string]any{}
		properties, _ := s["properties"].(map[string]any)
		required, _ := s["required"].([]any)
		for _, name := range required {
			if name, ok := name.(string); ok {
				object[name] = boundedInstance(properties[name], budget)
			}
		}
		return object
	case "array":
		n, _ := s["minItems"].(float64)
		prefix, _ := s["prefixItems"].([]any)
		array := []any{}
		for i := 0; i < int(n) && *budget > 0; i++ {
			*budget--
			if i < len(prefix) {
				array = append(array, boundedInstance(prefix[i], budget))
			} else {
				array = append(array, boundedInstance(s["items"], budget))
			}
		}
		return array
	case "string":
		n := 0
		if minLength, ok := s["minLength"].(float64); ok {
			n = min(int(minLength), max(*budget, 0))
		}
		*budget -= n
		return strings.Repeat("x", n)
	case "integer":
		return schemaNumber(s, true)
	case "number":
		return schemaNumber(s, false)
	case "boolean":
		return false
	}
	return nil
}

// schemaType is the schema's type, its first if it lists several; without
// one, the type its keywords imply, or "" (null, the simplest value).
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		if len(t) > 0 {
			first, _ := t[0].(string)
			return first
		}
	}
	switch {
	case s["properties"] != nil || s["required"] != nil:
		return "object"
	case s["items"] != nil || s["prefixItems"] != nil || s["minItems"] != nil:
		return "array"
	case s["minLength"] != nil:
		return "string"
	case s["minimum"] != nil || s["exclusiveMinimum"] != nil || s["maximum"] != nil:
		return "number"
	}
	return ""
}

// schemaNumber is 0, or the bound of minimum, exclusiveMinimum or maximum
// nearest to it.
func schemaNumber(s map[string]any, integer bool) float64 {
	v := 0.0
	if min, ok := s["minimum"].(float64); ok && v < min {
		v = min
		if integer {
			v = math.Ceil(min)
		}
	}
	if min, ok := s["exclusiveMinimum"].(float64); ok && v <= min {
		v = min + 1
		if integer {
			v = math.Floor(min) + 1
		}
	}
	if max, ok := s["maximum"].(float64); ok && v > max {
		v = max
		if integer {
			v = math.Floor(max)
		}
	}
	return v
}
