package store_test

import (
	"reflect"
	"testing"

	"github.com/ai-job-gateway/gateway/store"
)

// maxMethods bounds each store type's exported methods, promoted ones
// included: a type that outgrows it is split by domain (docs/architecture.md,
// The store).
const maxMethods = 40

func TestEveryStoreStaysNarrow(t *testing.T) {
	types := []reflect.Type{reflect.TypeFor[*store.Store](), reflect.TypeFor[*store.Cache]()}
	domains := reflect.TypeFor[store.Store]()
	for i := range domains.NumField() {
		if f := domains.Field(i); f.IsExported() {
			types = append(types, f.Type)
		}
	}
	if len(types) < 10 {
		t.Fatalf("found %d store types; the test no longer sees the domains", len(types))
	}
	for _, typ := range types {
		if n := typ.NumMethod(); n > maxMethods {
			t.Errorf("%s has %d exported methods, more than %d: split it by domain", typ, n, maxMethods)
		}
	}
}
