package activities_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ai-job-gateway/gateway/activities"
)

type registered []any

func (r *registered) RegisterActivity(a any) { *r = append(*r, a) }

// Temporal names a struct's activities after its methods, and recorded
// histories name the activities they ran: the receivers Register hands a
// worker export the names the one struct of old did, each once.
func TestRegisterKeepsActivityNames(t *testing.T) {
	t.Parallel()
	var r registered
	activities.New(activities.Deps{}).Register(&r)
	var names []string
	for _, receiver := range r {
		typ := reflect.TypeOf(receiver)
		for i := range typ.NumMethod() {
			names = append(names, typ.Method(i).Name)
		}
	}
	slices.Sort(names)
	require.Equal(t, []string{
		"CallAndComplete", "CallProvider", "CheckProvider", "DecideRoute", "DeleteJobFiles", "DeleteJobRuns", "DeliverWebhook",
		"DeliverWebhookEvent", "ExpireJobs", "ExpireResults", "ExtractAudio", "FailBatchFile", "FetchMedia", "FinishErasure",
		"ProbeMedia", "PurgeVendorCopy", "ReadBatchFile", "ReadJobTrail", "RecordRetentionSweep", "RecordWebhookGivenUp", "RemoveJobMedia", "ReserveBudget",
		"RestartErasures", "SaveJob", "StopJobWorkflow", "SubmitToProvider",
		"SweepProviderCallbacks", "SweepScratch", "SweepWorkFiles",
	}, names)
}
