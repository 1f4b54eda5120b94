package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/ai-job-gateway/gateway/workflows"
)

// helmChartDir is the gateway's Helm chart (docs/operations.md, Kubernetes).
var helmChartDir = filepath.Join("..", "..", "deploy", "helm", "gateway")

// The custom resources the chart may render have no type in k8s.io/api:
// these are the fields of them it uses, decoded as strictly.

// kedaScaledObject is KEDA's ScaledObject (keda.sh/v1alpha1).
type kedaScaledObject struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion,omitempty"`
			Kind       string `json:"kind,omitempty"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount *int32 `json:"maxReplicaCount,omitempty"`
		PollingInterval *int32 `json:"pollingInterval,omitempty"`
		CooldownPeriod  *int32 `json:"cooldownPeriod,omitempty"`
		Triggers        []struct {
			Type string `json:"type"`
			// KEDA's trigger metadata is a map of strings: a number
			// there is refused by the API server.
			Metadata          map[string]string `json:"metadata"`
			MetricType        string            `json:"metricType,omitempty"`
			AuthenticationRef *struct {
				Name string `json:"name"`
			} `json:"authenticationRef,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}

// kedaTriggerAuthentication is KEDA's TriggerAuthentication.
type kedaTriggerAuthentication struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		SecretTargetRef []struct {
			Parameter string `json:"parameter"`
			Name      string `json:"name"`
			Key       string `json:"key"`
		} `json:"secretTargetRef"`
	} `json:"spec"`
}

// serviceMonitor is the Prometheus Operator's ServiceMonitor
// (monitoring.coreos.com/v1).
type serviceMonitor struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// helmObjectTypes are the kinds the chart may render, each with the type
// its manifests must decode into strictly.
var helmObjectTypes = map[string]func() any{
	"v1/ConfigMap":                           func() any { return &corev1.ConfigMap{} },
	"v1/Service":                             func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                      func() any { return &corev1.ServiceAccount{} },
	"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
	"batch/v1/Job":                           func() any { return &batchv1.Job{} },
	"policy/v1/PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"networking.k8s.io/v1/Ingress":           func() any { return &networkingv1.Ingress{} },
	"networking.k8s.io/v1/NetworkPolicy":     func() any { return &networkingv1.NetworkPolicy{} },
	"keda.sh/v1alpha1/ScaledObject":          func() any { return &kedaScaledObject{} },
	"keda.sh/v1alpha1/TriggerAuthentication": func() any { return &kedaTriggerAuthentication{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any {
		return &serviceMonitor{}
	},
}

// helmRelease is what a chart rendered: every object, decoded into its
// type, by kind and name.
type helmRelease struct {
	objects map[string]map[string]any
	// notes is NOTES.txt as rendered.
	notes string
}

func (r helmRelease) get(kind, name string) any { return r.objects[kind][name] }

func (r helmRelease) names(kind string) []string {
	var names []string
	for name := range r.objects[kind] {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func loadGatewayChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(helmChartDir)
	require.NoError(t, err)
	return ch
}

// renderGatewayChart renders the chart as `helm install gw` would into
// namespace ai-job-gateway with values over its defaults (checked against
// values.schema.json), failing on a reference to a value that does not
// exist, and decodes every object strictly into its API type.
func renderGatewayChart(t *testing.T, values map[string]any) helmRelease {
	t.Helper()
	ch := loadGatewayChart(t)
	top, err := chartutil.ToRenderValues(ch, values, common.ReleaseOptions{Name: "gw", Namespace: "ai-job-gateway", Revision: 1, IsInstall: true}, nil)
	require.NoError(t, err)
	files, err := engine.Engine{Strict: true}.RenderWithContext(t.Context(), ch, top)
	require.NoError(t, err)

	release := helmRelease{objects: map[string]map[string]any{}}
	for file, text := range files {
		if strings.HasSuffix(file, "NOTES.txt") {
			release.notes = text
			continue
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(text, -1) {
			var head struct {
				APIVersion string            `json:"apiVersion"`
				Kind       string            `json:"kind"`
				Metadata   metav1.ObjectMeta `json:"metadata"`
			}
			require.NoError(t, k8syaml.Unmarshal([]byte(doc), &head), "%s #%d:\n%s", file, i, doc)
			if head.Kind == "" {
				require.Empty(t, strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")), "%s #%d: an object without a kind", file, i)
				continue
			}
			// Secrets are the operator's: the chart only names them.
			require.NotEqual(t, "Secret", head.Kind, "%s renders a Secret: secrets are referenced, never written by the chart", file)
			newObject, ok := helmObjectTypes[head.APIVersion+"/"+head.Kind]
			require.True(t, ok, "%s #%d: %s %s is not a kind this test knows; add it", file, i, head.APIVersion, head.Kind)
			object := newObject()
			require.NoError(t, decodeAsTheAPIServer([]byte(doc), object), "%s #%d (%s):\n%s", file, i, head.Kind, doc)
			require.NotEmpty(t, head.Metadata.Name, file)
			require.Equal(t, "gw", head.Metadata.Labels["app.kubernetes.io/instance"], "%s %s: the release's labels", head.Kind, head.Metadata.Name)
			require.Equal(t, "Helm", head.Metadata.Labels["app.kubernetes.io/managed-by"], "%s %s", head.Kind, head.Metadata.Name)
			if release.objects[head.Kind] == nil {
				release.objects[head.Kind] = map[string]any{}
			}
			require.NotContains(t, release.objects[head.Kind], head.Metadata.Name, "%s %s twice", head.Kind, head.Metadata.Name)
			release.objects[head.Kind][head.Metadata.Name] = object
		}
	}
	return release
}

// decodeAsTheAPIServer decodes a manifest as the API server reads what
// kubectl or Helm sends it: the YAML turned into JSON on its own (a number
// stays a number, even where a string is wanted; a key twice is an
// error), then decoded into the object's type with unknown fields refused.
func decodeAsTheAPIServer(manifest []byte, object any) error {
	data, err := k8syaml.YAMLToJSONStrict(manifest)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(object)
}

// helmCIValues are the chart's ci/*-values.yaml files, by name.
func helmCIValues(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(helmChartDir, "ci", "*-values.yaml"))
	require.NoError(t, err)
	out := map[string]map[string]any{}
	for _, file := range files {
		values, err := common.ReadValuesFile(file)
		require.NoError(t, err, file)
		out[filepath.Base(file)] = values
	}
	require.Contains(t, out, "all-on-values.yaml")
	return out
}

// TestHelmChartLints runs Helm's linter (what `helm lint` runs: Chart.yaml,
// values against values.schema.json, every template rendered and parsed)
// with the default values and with each ci/ values file: no warning, no
// error.
func TestHelmChartLints(t *testing.T) {
	t.Parallel()
	sets := helmCIValues(t)
	sets["defaults"] = nil
	for name, values := range sets {
		linter := lint.RunAll(helmChartDir, values, "ai-job-gateway")
		for _, m := range linter.Messages {
			require.Less(t, m.Severity, support.WarningSev, "%s: %s", name, m.Error())
		}
		require.Less(t, linter.HighestSeverity, support.WarningSev, name)
	}

	// The linter does fail: a value of the wrong type is refused by the
	// schema.
	linter := lint.RunAll(helmChartDir, map[string]any{"serve": map[string]any{"replicas": "two"}}, "ai-job-gateway")
	require.Equal(t, support.ErrorSev, linter.HighestSeverity)
}

// TestHelmChartValuesNeverHoldSecrets checks that values.schema.json
// refuses a secret written into the values (the chart reads each from a
// Secret) and a setting the gateway does not read.
func TestHelmChartValuesNeverHoldSecrets(t *testing.T) {
	t.Parallel()
	ch := loadGatewayChart(t)
	for name, values := range map[string]map[string]any{
		"database URL":      {"database": map[string]any{"url": "postgres://gateway:secret@db/gateway"}},
		"payload keys":      {"payloadKeys": map[string]any{"value": "k1:c2VjcmV0"}},
		"Temporal API key":  {"temporal": map[string]any{"apiKey": map[string]any{"value": "key"}}},
		"console secret":    {"oidc": map[string]any{"consoleClientSecret": "secret"}},
		"an unknown value":  {"replicaCount": 3},
		"a lowercase env":   {"env": map[string]any{"gateway_region": "eu"}},
		"no Temporal":       {"temporal": map[string]any{"address": ""}},
		"a KEDA queue type": {"worker": map[string]any{"keda": map[string]any{"queueTypes": "workflows"}}},
	} {
		_, err := chartutil.ToRenderValues(ch, values, common.ReleaseOptions{Name: "gw", Namespace: "ai-job-gateway"}, nil)
		require.Error(t, err, name)
	}
}

// TestHelmChartRendersWhatTheGatewayRuns renders the chart with its
// defaults and with every option on (ci/all-on-values.yaml), every object
// decoding strictly into its Kubernetes API type, and checks what kubectl
// would not: each container runs a command of this binary with flags it
// has and only settings it reads, its pod passes Pod Security
// "restricted", secrets come from Secrets, migrate is a hook that needs
// nothing the release has not created yet, and what selects or scales
// something finds it.
func TestHelmChartRendersWhatTheGatewayRuns(t *testing.T) {
	t.Parallel()
	known := knownSettings(t)
	for name := range documentedSettings(t) {
		known[name] = true
	}
	defaults := renderGatewayChart(t, nil)
	allOn := renderGatewayChart(t, helmCIValues(t)["all-on-values.yaml"])

	for name, release := range map[string]helmRelease{"defaults": defaults, "all on": allOn} {
		checkHelmPods(t, name, release, known)
		checkHelmSelectors(t, name, release)
		require.Contains(t, release.notes, "gw-gateway-migrate", name)
	}

	// Defaults: serve and worker with their autoscalers and budgets, the
	// migrate hook; none of the options.
	require.Equal(t, []string{"gw-gateway-serve", "gw-gateway-worker"}, defaults.names("Deployment"))
	require.Equal(t, []string{"gw-gateway-serve", "gw-gateway-worker"}, defaults.names("HorizontalPodAutoscaler"))
	require.Equal(t, []string{"gw-gateway-serve", "gw-gateway-worker"}, defaults.names("PodDisruptionBudget"))
	require.Equal(t, []string{"gw-gateway-migrate"}, defaults.names("Job"))
	require.Equal(t, []string{"gw-gateway"}, defaults.names("Service"))
	for _, kind := range []string{"Ingress", "NetworkPolicy", "ServiceMonitor", "ScaledObject", "TriggerAuthentication", "ServiceAccount"} {
		require.Empty(t, defaults.names(kind), "defaults render no %s", kind)
	}

	// Every option on.
	require.Equal(t, []string{"gw-gateway-serve"}, allOn.names("HorizontalPodAutoscaler"), "KEDA, not a second autoscaler, scales the workers")
	for _, kind := range []string{"Ingress", "ServiceMonitor", "ScaledObject", "TriggerAuthentication", "ServiceAccount"} {
		require.Len(t, allOn.names(kind), 1, kind)
	}
	require.Equal(t, []string{"gw-gateway-migrate", "gw-gateway-serve", "gw-gateway-worker"}, allOn.names("NetworkPolicy"))
	checkHelmKEDA(t, allOn)
	serve := allOn.get("Deployment", "gw-gateway-serve").(*appsv1.Deployment).Spec.Template.Spec
	require.Equal(t, "gw-gateway", serve.ServiceAccountName)
	require.NotNil(t, allOn.get("ServiceAccount", "gw-gateway"))
	// The Temporal client certificate: mounted where the variables say.
	env := containerEnv(serve.Containers[0])
	for _, variable := range []string{"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"} {
		require.NotNil(t, env[variable], variable)
		require.Equal(t, "temporal-client-tls", secretFileAt(serve, serve.Containers[0], env[variable].Value), "%s is a file of the TLS Secret", variable)
	}
	require.Equal(t, "true", env["TEMPORAL_TLS"].Value)
	for variable, secret := range map[string]string{
		"DATABASE_URL":                "gateway-secrets",
		"GATEWAY_PAYLOAD_KEYS":        "gateway-secrets",
		"GATEWAY_WEBHOOK_SIGNING_KEY": "gateway-secrets",
		"TEMPORAL_API_KEY":            "temporal-api-key",
		"CONSOLE_OIDC_CLIENT_SECRET":  "gateway-secrets",
	} {
		require.NotNil(t, env[variable], variable)
		require.NotNil(t, env[variable].ValueFrom, variable)
		require.Equal(t, secret, env[variable].ValueFrom.SecretKeyRef.Name, variable)
	}
	require.Equal(t, "600", env["GATEWAY_TENANT_CREATE_RATE"].Value, "serve's own env")
	require.Nil(t, containerEnv(allOn.get("Deployment", "gw-gateway-worker").(*appsv1.Deployment).Spec.Template.Spec.Containers[0])["GATEWAY_TENANT_CREATE_RATE"], "serve's env is not the worker's")

	// Turned off one by one, each option renders nothing.
	for value, kinds := range map[string][]string{
		"ingress":        {"Ingress"},
		"networkPolicy":  {"NetworkPolicy"},
		"serviceMonitor": {"ServiceMonitor"},
	} {
		values := helmCIValues(t)["all-on-values.yaml"]
		values[value] = map[string]any{"enabled": false}
		release := renderGatewayChart(t, values)
		for _, kind := range kinds {
			require.Empty(t, release.names(kind), "%s.enabled: false", value)
		}
	}
	values := helmCIValues(t)["all-on-values.yaml"]
	values["worker"].(map[string]any)["keda"] = map[string]any{"enabled": false}
	release := renderGatewayChart(t, values)
	require.Empty(t, release.names("ScaledObject"))
	require.Empty(t, release.names("TriggerAuthentication"))
	require.Contains(t, release.names("HorizontalPodAutoscaler"), "gw-gateway-worker", "without KEDA the worker has its HPA")
}

// TestHelmChartMatchesTheKustomizeBase checks that the chart's containers
// run as deploy/k8s's do: the same image and release, commands and flags,
// ports, probes, resources, grace periods and security contexts.
func TestHelmChartMatchesTheKustomizeBase(t *testing.T) {
	t.Parallel()
	base := map[string]corev1.PodSpec{}
	for _, file := range []string{"serve.yaml", "worker.yaml", "migrate-job.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "k8s", file))
		require.NoError(t, err)
		doc := regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1)[0]
		if file == "migrate-job.yaml" {
			var job batchv1.Job
			require.NoError(t, k8syaml.UnmarshalStrict([]byte(doc), &job))
			base["gw-gateway-migrate"] = job.Spec.Template.Spec
			continue
		}
		var d appsv1.Deployment
		require.NoError(t, k8syaml.UnmarshalStrict([]byte(doc), &d))
		base["gw-gateway-"+strings.TrimSuffix(file, ".yaml")] = d.Spec.Template.Spec
	}
	release := renderGatewayChart(t, nil)
	charted := map[string]corev1.PodSpec{
		"gw-gateway-serve":   release.get("Deployment", "gw-gateway-serve").(*appsv1.Deployment).Spec.Template.Spec,
		"gw-gateway-worker":  release.get("Deployment", "gw-gateway-worker").(*appsv1.Deployment).Spec.Template.Spec,
		"gw-gateway-migrate": release.get("Job", "gw-gateway-migrate").(*batchv1.Job).Spec.Template.Spec,
	}
	var kustomization struct {
		Images []struct {
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "k8s", "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, k8syaml.Unmarshal(data, &kustomization))
	require.NotEmpty(t, kustomization.Images)
	for name, want := range base {
		got := charted[name]
		require.Equal(t, kustomization.Images[0].NewName+":"+kustomization.Images[0].NewTag, got.Containers[0].Image, "%s: the image and release deploy/k8s runs", name)
		require.Equal(t, want.SecurityContext, got.SecurityContext, name)
		require.Equal(t, want.TerminationGracePeriodSeconds, got.TerminationGracePeriodSeconds, name)
		require.Len(t, got.Containers, len(want.Containers), name)
		for i, w := range want.Containers {
			g := got.Containers[i]
			require.Equal(t, w.Name, g.Name, name)
			require.Equal(t, w.Args, g.Args, name)
			require.Equal(t, w.Ports, g.Ports, name)
			require.Equal(t, w.ReadinessProbe, g.ReadinessProbe, name)
			require.Equal(t, w.LivenessProbe, g.LivenessProbe, name)
			require.Equal(t, w.Resources, g.Resources, name)
			require.Equal(t, w.SecurityContext, g.SecurityContext, name)
			for _, m := range w.VolumeMounts {
				require.Contains(t, g.VolumeMounts, m, name)
			}
		}
	}
}

// documentedSettings are the environment variables docs/operations.md
// names that the gateway reads but no flag's usage names: Temporal's own
// (Temporal connection, read through the SDK's envconfig) and the
// console's client secret (Configuration).
func documentedSettings(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	require.NoError(t, err)
	names := map[string]bool{}
	for _, m := range regexp.MustCompile("`(TEMPORAL_[A-Z_]+[A-Z]|CONSOLE_OIDC_CLIENT_SECRET)`").FindAllStringSubmatch(string(doc), -1) {
		names[m[1]] = true
	}
	for _, name := range []string{"TEMPORAL_API_KEY", "TEMPORAL_TLS", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_SERVER_NAME", "CONSOLE_OIDC_CLIENT_SECRET"} {
		require.True(t, names[name], "docs/operations.md names %s", name)
	}
	return names
}

// secretValued are the settings that are secrets: only ever read from a
// Secret.
var secretValued = []string{"DATABASE_URL", "GATEWAY_PAYLOAD_KEYS", "GATEWAY_WEBHOOK_SIGNING_KEY", "TEMPORAL_API_KEY", "CONSOLE_OIDC_CLIENT_SECRET", "AWS_SECRET_ACCESS_KEY", "TEMPORAL_TLS_CLIENT_KEY_DATA"}

func containerEnv(c corev1.Container) map[string]*corev1.EnvVar {
	env := map[string]*corev1.EnvVar{}
	for i := range c.Env {
		env[c.Env[i].Name] = &c.Env[i]
	}
	return env
}

// secretFileAt is the Secret whose volume holds path in c, "" if none.
func secretFileAt(pod corev1.PodSpec, c corev1.Container, path string) string {
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, m.MountPath+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			for _, item := range v.Secret.Items {
				if item.Path == rel {
					return v.Secret.SecretName
				}
			}
		}
	}
	return ""
}

// checkHelmPods checks every pod template the release renders.
func checkHelmPods(t *testing.T, name string, release helmRelease, known map[string]bool) {
	t.Helper()
	createdConfigMaps := release.objects["ConfigMap"]
	createdAccounts := release.objects["ServiceAccount"]
	pods := 0
	templates := map[string]*corev1.PodTemplateSpec{}
	for n, o := range release.objects["Deployment"] {
		d := o.(*appsv1.Deployment)
		templates[n] = &d.Spec.Template
		require.Nil(t, d.Spec.Replicas, "%s: %s: the autoscaler owns replicas", name, n)
		selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		require.NoError(t, err)
		require.True(t, selector.Matches(labels.Set(d.Spec.Template.Labels)), "%s: %s selects its own pods", name, n)
	}
	for n, o := range release.objects["Job"] {
		job := o.(*batchv1.Job)
		templates[n] = &job.Spec.Template
		// A pre-install hook runs before the release's other objects
		// exist: it may read only what the operator created.
		hooks := strings.Split(job.Annotations["helm.sh/hook"], ",")
		require.ElementsMatch(t, []string{"pre-install", "pre-upgrade"}, hooks, "%s: %s", name, n)
		require.NotEmpty(t, job.Annotations["helm.sh/hook-delete-policy"], "%s: %s: a new run replaces the last", name, n)
		pod := job.Spec.Template.Spec
		require.NotContains(t, createdAccounts, pod.ServiceAccountName, "%s: %s runs before its service account exists", name, n)
		for _, v := range pod.Volumes {
			if v.ConfigMap != nil {
				require.NotContains(t, createdConfigMaps, v.ConfigMap.Name, "%s: %s mounts a ConfigMap it runs before", name, n)
			}
		}
		for _, c := range pod.Containers {
			for _, from := range c.EnvFrom {
				require.Nil(t, from.ConfigMapRef, "%s: %s reads a ConfigMap it runs before", name, n)
			}
			require.Equal(t, []string{"migrate"}, c.Args)
		}
	}
	for n, template := range templates {
		pods++
		pod := template.Spec
		require.Empty(t, podSecurityRestricted(&pod), "%s: %s passes Pod Security restricted", name, n)
		require.NotNil(t, pod.AutomountServiceAccountToken, "%s: %s", name, n)
		require.False(t, *pod.AutomountServiceAccountToken, "%s: %s: the gateway does not call the Kubernetes API", name, n)
		for _, v := range pod.Volumes {
			if v.ConfigMap != nil {
				require.Contains(t, createdConfigMaps, v.ConfigMap.Name, "%s: %s mounts a ConfigMap of the release", name, n)
			}
		}
		for _, c := range pod.Containers {
			require.Regexp(t, `^ghcr\.io/ai-job-gateway/gateway:\S+$`, c.Image, "%s: %s", name, n)
			require.NotNil(t, c.SecurityContext.ReadOnlyRootFilesystem, "%s: %s", name, n)
			require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem, "%s: %s", name, n)
			require.NotEmpty(t, c.Resources.Requests, "%s: %s", name, n)
			require.NotEmpty(t, c.Resources.Limits, "%s: %s", name, n)
			require.NotEmpty(t, c.Args, "%s: %s", name, n)
			var cfg config
			fs := flag.NewFlagSet(c.Args[0], flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			cfg.registerFlags(fs, c.Args[0])
			require.NoError(t, fs.Parse(c.Args[1:]), "%s: %s: gateway %v", name, n, c.Args)
			env := containerEnv(c)
			for variable, e := range env {
				require.True(t, known[variable], "%s: %s sets %s, which the gateway does not read", name, n, variable)
				require.NotRegexp(t, `^[0-9.]+e[+-][0-9]+$`, e.Value, "%s: %s: %s in a number form the gateway does not parse", name, n, variable)
				if slices.Contains(secretValued, variable) {
					require.Empty(t, e.Value, "%s: %s: %s is written into the manifest", name, n, variable)
					require.NotNil(t, e.ValueFrom, "%s: %s: %s", name, n, variable)
					require.NotNil(t, e.ValueFrom.SecretKeyRef, "%s: %s: %s comes from a Secret", name, n, variable)
				}
			}
			for _, variable := range []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE"} {
				require.NotNil(t, env[variable], "%s: %s reads %s", name, n, variable)
			}
			if c.Args[0] != "migrate" {
				require.NotNil(t, env["GATEWAY_PAYLOAD_KEYS"], "%s: %s: every process that talks to Temporal has the payload keys", name, n)
				require.NotNil(t, c.ReadinessProbe, "%s: %s", name, n)
				require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path, "%s: %s", name, n)
				require.NotNil(t, c.LivenessProbe, "%s: %s", name, n)
				require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path, "%s: %s", name, n)
			}
			if c.Args[0] == "serve" {
				require.NotNil(t, env["OIDC_ISSUER_URL"], "%s: serve needs its issuer", name)
			}
		}
	}
	require.Equal(t, 3, pods, "%s: serve, worker and migrate", name)
}

// checkHelmSelectors checks that what selects or points at objects of the
// release finds them.
func checkHelmSelectors(t *testing.T, name string, release helmRelease) {
	t.Helper()
	podsOf := func(selector labels.Selector) []string {
		var found []string
		for n, o := range release.objects["Deployment"] {
			if selector.Matches(labels.Set(o.(*appsv1.Deployment).Spec.Template.Labels)) {
				found = append(found, n)
			}
		}
		for n, o := range release.objects["Job"] {
			if selector.Matches(labels.Set(o.(*batchv1.Job).Spec.Template.Labels)) {
				found = append(found, n)
			}
		}
		slices.Sort(found)
		return found
	}
	containerPort := func(deployment, port string) bool {
		d, ok := release.get("Deployment", deployment).(*appsv1.Deployment)
		if !ok {
			return false
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == port {
					return true
				}
			}
		}
		return false
	}
	for n, o := range release.objects["Service"] {
		svc := o.(*corev1.Service)
		found := podsOf(labels.SelectorFromSet(svc.Spec.Selector))
		require.Len(t, found, 1, "%s: Service %s selects one Deployment's pods: %v", name, n, found)
		for _, p := range svc.Spec.Ports {
			require.True(t, containerPort(found[0], p.TargetPort.StrVal), "%s: Service %s: port %s", name, n, p.TargetPort.String())
		}
	}
	for n, o := range release.objects["PodDisruptionBudget"] {
		pdb := o.(*policyv1.PodDisruptionBudget)
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		require.NoError(t, err)
		require.Equal(t, []string{n}, podsOf(selector), "%s: PodDisruptionBudget %s", name, n)
	}
	for n, o := range release.objects["HorizontalPodAutoscaler"] {
		hpa := o.(*autoscalingv2.HorizontalPodAutoscaler)
		require.Equal(t, "Deployment", hpa.Spec.ScaleTargetRef.Kind)
		require.NotNil(t, release.get("Deployment", hpa.Spec.ScaleTargetRef.Name), "%s: HPA %s scales what exists", name, n)
		require.Equal(t, corev1.ResourceCPU, hpa.Spec.Metrics[0].Resource.Name, "%s: HPA %s on CPU", name, n)
	}
	for n, o := range release.objects["NetworkPolicy"] {
		np := o.(*networkingv1.NetworkPolicy)
		selector, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		require.NoError(t, err)
		require.Equal(t, []string{n}, podsOf(selector), "%s: NetworkPolicy %s", name, n)
		require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes, "%s: %s leaves egress open", name, n)
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				require.True(t, containerPort(n, p.Port.StrVal), "%s: NetworkPolicy %s admits port %s", name, n, p.Port.String())
			}
		}
	}
	for n, o := range release.objects["Ingress"] {
		ing := o.(*networkingv1.Ingress)
		for _, rule := range ing.Spec.Rules {
			for _, path := range rule.HTTP.Paths {
				svc, ok := release.get("Service", path.Backend.Service.Name).(*corev1.Service)
				require.True(t, ok, "%s: Ingress %s routes to a Service of the release", name, n)
				require.Equal(t, path.Backend.Service.Port.Name, svc.Spec.Ports[0].Name)
				require.Equal(t, []string{"gw-gateway-serve"}, podsOf(labels.SelectorFromSet(svc.Spec.Selector)), "%s: Ingress %s reaches serve", name, n)
			}
		}
	}
	for n, o := range release.objects["ServiceMonitor"] {
		sm := o.(*serviceMonitor)
		selector, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		require.NoError(t, err)
		var scraped []string
		for _, svcObject := range release.objects["Service"] {
			svc := svcObject.(*corev1.Service)
			if !selector.Matches(labels.Set(svc.Labels)) {
				continue
			}
			require.Equal(t, sm.Spec.Endpoints[0].Port, svc.Spec.Ports[0].Name, "%s: ServiceMonitor %s scrapes a named port", name, n)
			scraped = append(scraped, podsOf(labels.SelectorFromSet(svc.Spec.Selector))...)
		}
		slices.Sort(scraped)
		require.Equal(t, []string{"gw-gateway-serve", "gw-gateway-worker"}, scraped, "%s: ServiceMonitor %s", name, n)
		require.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)
	}
}

// kedaTemporalSettings are the trigger metadata KEDA's temporal scaler
// reads (KEDA 2.17 and later; versioning settings left out).
var kedaTemporalSettings = []string{"endpoint", "namespace", "taskQueue", "queueTypes", "targetQueueSize", "activationTargetQueueSize", "tlsServerName", "enableTLS", "unsafeSsl", "minConnectTimeout"}

// checkHelmKEDA checks the worker's ScaledObject: KEDA's temporal scaler
// on the gateway's task queue, at the pods' Temporal, authenticated as the
// pods are.
func checkHelmKEDA(t *testing.T, release helmRelease) {
	t.Helper()
	so := release.get("ScaledObject", "gw-gateway-worker").(*kedaScaledObject)
	require.NotNil(t, release.get("Deployment", so.Spec.ScaleTargetRef.Name), "the ScaledObject scales what exists")
	worker := release.get("Deployment", so.Spec.ScaleTargetRef.Name).(*appsv1.Deployment)
	env := containerEnv(worker.Spec.Template.Spec.Containers[0])
	var temporal, cpu bool
	for _, trigger := range so.Spec.Triggers {
		switch trigger.Type {
		case "temporal":
			temporal = true
			require.Equal(t, workflows.TaskQueue, trigger.Metadata["taskQueue"])
			require.Equal(t, env["TEMPORAL_ADDRESS"].Value, trigger.Metadata["endpoint"])
			require.Equal(t, env["TEMPORAL_NAMESPACE"].Value, trigger.Metadata["namespace"])
			require.Regexp(t, `^[1-9][0-9]*$`, trigger.Metadata["targetQueueSize"])
			for key := range trigger.Metadata {
				require.Contains(t, kedaTemporalSettings, key, "a setting KEDA's temporal scaler has")
			}
			require.NotNil(t, trigger.AuthenticationRef)
			auth, ok := release.get("TriggerAuthentication", trigger.AuthenticationRef.Name).(*kedaTriggerAuthentication)
			require.True(t, ok, "the trigger's authentication is in the release")
			refs := map[string]string{}
			for _, ref := range auth.Spec.SecretTargetRef {
				require.Contains(t, []string{"apiKey", "cert", "key", "keyPassword", "ca"}, ref.Parameter, "an authentication parameter of KEDA's temporal scaler")
				refs[ref.Parameter] = ref.Name + "/" + ref.Key
			}
			key := env["TEMPORAL_API_KEY"].ValueFrom.SecretKeyRef
			require.Equal(t, key.Name+"/"+key.Key, refs["apiKey"], "KEDA's API key is the pods'")
			for parameter, variable := range map[string]string{"cert": "TEMPORAL_TLS_CLIENT_CERT_PATH", "key": "TEMPORAL_TLS_CLIENT_KEY_PATH", "ca": "TEMPORAL_TLS_SERVER_CA_CERT_PATH"} {
				pod := worker.Spec.Template.Spec
				secret := secretFileAt(pod, pod.Containers[0], env[variable].Value)
				require.Equal(t, secret+"/"+filepath.Base(env[variable].Value), refs[parameter], "KEDA's %s is the pods' %s", parameter, variable)
			}
		case "cpu":
			cpu = true
			require.Equal(t, "Utilization", trigger.MetricType)
		}
	}
	require.True(t, temporal && cpu, "triggers on the task queue's backlog and on CPU")
}
