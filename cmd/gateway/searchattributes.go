package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ai-job-gateway/gateway/workflows"
)

// registerSearchAttributes adds the job workflows' search attributes the
// namespace lacks (docs/operations.md, Finding jobs). Run again, it adds
// nothing. An attribute registered with another type is an error.
func registerSearchAttributes(ctx context.Context, tc client.Client, namespace string) error {
	missing, err := missingSearchAttributes(ctx, tc, namespace)
	if err != nil || len(missing) == 0 {
		return err
	}
	_, err = tc.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("register search attributes %v in namespace %s: %w", slices.Sorted(maps.Keys(missing)), namespace, err)
	}
	return awaitSearchAttributes(ctx, tc, namespace)
}

// awaitSearchAttributes waits until the frontend accepts a query on the
// attributes just added: it learns of them when it refreshes its
// namespace cache, and until then it refuses workflow starts that carry
// them.
func awaitSearchAttributes(ctx context.Context, tc client.Client, namespace string) error {
	var terms []string
	for name := range workflows.SearchAttributeTypes() {
		if name == workflows.PolicyVersionKey.GetName() {
			terms = append(terms, name+" = 0")
		} else {
			terms = append(terms, name+" = ''")
		}
	}
	query := strings.Join(terms, " AND ")
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, Query: query, PageSize: 1})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the search attributes were added, but namespace %s does not take them yet: %w", namespace, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// missingSearchAttributes are the job workflows' search attributes the
// namespace does not have yet.
func missingSearchAttributes(ctx context.Context, tc client.Client, namespace string) (map[string]enumspb.IndexedValueType, error) {
	resp, err := tc.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list the search attributes of namespace %s: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range workflows.SearchAttributeTypes() {
		have, ok := resp.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = typ
		case have != typ:
			return nil, fmt.Errorf("namespace %s has search attribute %s as %s; the gateway needs %s", namespace, name, have, typ)
		}
	}
	return missing, nil
}

// searchAttributesReady reports whether job workflows may use their
// search attributes: registered here when register is true (dev, or an
// operator's choice), else checked. Without them jobs run as before, and
// the log says how to add them.
func searchAttributesReady(ctx context.Context, tc client.Client, namespace string, register bool, logger *slog.Logger) bool {
	var err error
	if register {
		err = registerSearchAttributes(ctx, tc, namespace)
	} else {
		var missing map[string]enumspb.IndexedValueType
		if missing, err = missingSearchAttributes(ctx, tc, namespace); err == nil && len(missing) > 0 {
			err = fmt.Errorf("namespace %s lacks %v", namespace, slices.Sorted(maps.Keys(missing)))
		}
	}
	if err != nil {
		logger.Warn("jobs start without search attributes; add them with `gateway migrate --temporal-address ...` (docs/operations.md, Finding jobs)", "error", err)
		return false
	}
	return true
}
