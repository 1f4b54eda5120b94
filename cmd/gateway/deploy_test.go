package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	composetypes "github.com/compose-spec/compose-go/v2/types"
	"github.com/distribution/reference"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	k8syaml "sigs.k8s.io/yaml"
)

// k8sObject is the part of a Kubernetes object the checks read.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Replicas       *int `yaml:"replicas"`
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		Template podTemplate `yaml:"template"`
	} `yaml:"spec"`
}

type podTemplate struct {
	Metadata struct {
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		SecurityContext struct {
			RunAsNonRoot bool `yaml:"runAsNonRoot"`
		} `yaml:"securityContext"`
		Containers []struct {
			Name    string   `yaml:"name"`
			Image   string   `yaml:"image"`
			Args    []string `yaml:"args"`
			EnvFrom []struct {
				ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
				SecretRef    *struct{ Name string } `yaml:"secretRef"`
			} `yaml:"envFrom"`
			ReadinessProbe *struct {
				HTTPGet struct{ Path string } `yaml:"httpGet"`
			} `yaml:"readinessProbe"`
			LivenessProbe *struct {
				HTTPGet struct{ Path string } `yaml:"httpGet"`
			} `yaml:"livenessProbe"`
			Resources struct {
				Requests map[string]string `yaml:"requests"`
				Limits   map[string]string `yaml:"limits"`
			} `yaml:"resources"`
			SecurityContext struct {
				AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			} `yaml:"securityContext"`
		} `yaml:"containers"`
	} `yaml:"spec"`
}

// externalSecret is the Secret the pods read, which the operator creates
// (deploy/k8s/gateway-secrets.example.env): it is not in the kustomization.
const externalSecret = "gateway-secrets"

// TestKubernetesManifests checks deploy/k8s as kubectl would not: every
// container runs a command of this binary with flags it has, reads only
// settings the gateway knows, and has probes, resources and no root; the
// autoscaler and disruption budgets point at what exists; and the
// kustomization holds no Secret to apply over the operator's.
func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "deploy", "k8s")
	var kustomization struct {
		Resources       []string `yaml:"resources"`
		SecretGenerator []struct {
			Name string `yaml:"name"`
		} `yaml:"secretGenerator"`
		Images []struct {
			Name string `yaml:"name"`
		} `yaml:"images"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &kustomization))
	require.NotEmpty(t, kustomization.Images)

	var objects []k8sObject
	for _, res := range kustomization.Resources {
		data, err := os.ReadFile(filepath.Join(dir, res))
		require.NoError(t, err, "kustomization lists %s", res)
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o k8sObject
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else {
				require.NoError(t, err, res)
			}
			require.NotEmpty(t, o.Kind, res)
			objects = append(objects, o)
		}
	}
	byKind := func(kind, name string) *k8sObject {
		for i := range objects {
			if objects[i].Kind == kind && objects[i].Metadata.Name == name {
				return &objects[i]
			}
		}
		return nil
	}

	// The Secret is the operator's (externalSecret): one in the
	// kustomization, listed or generated, would be applied over theirs
	// with its placeholders.
	for _, g := range kustomization.SecretGenerator {
		require.Fail(t, "kustomization generates a Secret", "secretGenerator %s: `kubectl apply -k` would replace the real Secret", g.Name)
	}
	for _, o := range objects {
		require.NotEqual(t, "Secret", o.Kind, "kustomization lists Secret %s: `kubectl apply -k` would write its placeholders over the real one", o.Metadata.Name)
	}
	example, err := os.ReadFile(filepath.Join(dir, externalSecret+".example.env"))
	require.NoError(t, err, "the keys of %s", externalSecret)
	require.Contains(t, string(example), "create secret generic "+externalSecret+" --from-env-file=")
	keys := map[string]bool{}
	for _, line := range strings.Split(string(example), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, _, ok := strings.Cut(line, "=")
		require.True(t, ok, "%s.example.env: %q is not KEY=value", externalSecret, line)
		keys[key] = true
	}
	for _, key := range []string{"DATABASE_URL", envWebhookSigningKey, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		require.True(t, keys[key], "%s.example.env lists %s", externalSecret, key)
	}

	known := knownSettings(t)
	for _, o := range objects {
		if o.Kind == "ConfigMap" && o.Metadata.Name == "gateway-config" {
			for key := range o.Data {
				require.True(t, known[key], "ConfigMap key %s is not a setting of the gateway", key)
			}
		}
	}

	for _, o := range objects {
		switch o.Kind {
		case "Deployment", "Job":
			pod := o.Spec.Template.Spec
			require.True(t, pod.SecurityContext.RunAsNonRoot, "%s runs as non-root", o.Metadata.Name)
			for _, c := range pod.Containers {
				require.Equal(t, kustomization.Images[0].Name, c.Image, "%s: the image kustomize sets", c.Name)
				require.NotEmpty(t, c.Args, c.Name)
				command := c.Args[0]
				var cfg config
				fs := flag.NewFlagSet(command, flag.ContinueOnError)
				fs.SetOutput(io.Discard)
				cfg.registerFlags(fs, command)
				require.NoError(t, fs.Parse(c.Args[1:]), "%s: gateway %v", c.Name, c.Args)
				require.NotEmpty(t, c.Resources.Requests, "%s has resource requests", c.Name)
				require.NotEmpty(t, c.Resources.Limits, "%s has resource limits", c.Name)
				require.NotNil(t, c.SecurityContext.AllowPrivilegeEscalation, c.Name)
				require.False(t, *c.SecurityContext.AllowPrivilegeEscalation, c.Name)
				for _, from := range c.EnvFrom {
					if from.ConfigMapRef != nil {
						require.NotNil(t, byKind("ConfigMap", from.ConfigMapRef.Name), "%s reads ConfigMap %s", c.Name, from.ConfigMapRef.Name)
					}
					if from.SecretRef != nil {
						require.Equal(t, externalSecret, from.SecretRef.Name, "%s reads the Secret the operator creates", c.Name)
					}
				}
				if o.Kind == "Deployment" {
					require.NotNil(t, c.ReadinessProbe, c.Name)
					require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path, c.Name)
					require.NotNil(t, c.LivenessProbe, c.Name)
					require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path, c.Name)
				}
			}
		case "HorizontalPodAutoscaler":
			target := byKind(o.Spec.ScaleTargetRef.Kind, o.Spec.ScaleTargetRef.Name)
			require.NotNil(t, target, "%s scales what exists", o.Metadata.Name)
			require.Nil(t, target.Spec.Replicas, "%s: the autoscaler owns its replicas; kubectl apply would set them back", o.Metadata.Name)
		case "PodDisruptionBudget":
			matched := false
			for _, d := range objects {
				if d.Kind == "Deployment" && labelsMatch(o.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
					matched = true
				}
			}
			require.True(t, matched, "%s selects a Deployment's pods", o.Metadata.Name)
		}
	}
	require.NotNil(t, byKind("Job", "gateway-migrate"))
	require.NotNil(t, byKind("HorizontalPodAutoscaler", "gateway-worker"))
}

func labelsMatch(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// knownSettings are the environment variables the gateway's commands
// read: those their flags name ("(env X)"), and the bucket's AWS_* ones.
func knownSettings(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_REGION": true, envWebhookSigningKey: true, envPayloadKeys: true}
	env := regexp.MustCompile(`env ([A-Z_]+)`)
	for _, command := range []string{"dev", "serve", "worker", "migrate"} {
		var cfg config
		fs := flag.NewFlagSet(command, flag.ContinueOnError)
		cfg.registerFlags(fs, command)
		fs.VisitAll(func(f *flag.Flag) {
			for _, m := range env.FindAllStringSubmatch(f.Usage, -1) {
				known[m[1]] = true
			}
		})
	}
	require.True(t, known["DATABASE_URL"] && known["TEMPORAL_ADDRESS"], "%v", known)
	return known
}

// TestComposeStack checks deploy/docker-compose.yaml: the gateway's
// services run commands it has with settings it reads, and every file a
// service mounts is in deploy/.
func TestComposeStack(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "deploy")
	data, err := os.ReadFile(filepath.Join(dir, "docker-compose.yaml"))
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(data, &compose))
	known := knownSettings(t)
	gateways := 0
	for name, svc := range compose.Services {
		for _, v := range svc.Volumes {
			if src, _, ok := strings.Cut(v, ":"); ok && strings.HasPrefix(src, "./") {
				_, err := os.Stat(filepath.Join(dir, src))
				require.NoError(t, err, "%s mounts %s", name, src)
			}
		}
		if repository, _, _ := strings.Cut(svc.Image, ":"); repository != "ai-job-gateway" && repository != "ai-job-gateway-dev" {
			continue
		}
		gateways++
		require.NotEmpty(t, svc.Command, name)
		var cfg config
		fs := flag.NewFlagSet(svc.Command[0], flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg.registerFlags(fs, svc.Command[0])
		require.NoError(t, fs.Parse(svc.Command[1:]), "%s: gateway %v", name, svc.Command)
		for key := range svc.Environment {
			require.True(t, known[key], "%s sets %s, which the gateway does not read", name, key)
		}
	}
	require.Equal(t, 4, gateways, "migrate, idp, api and worker")
	for _, want := range []string{"postgres", "temporal", "s3", "prometheus", "grafana"} {
		require.Contains(t, compose.Services, want)
	}
}

// TestDockerfile checks deploy/Dockerfile builds what `make build-prod`
// builds (no dev), runs as non-root, listens beyond loopback, and checks
// its health with the binary itself.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "Dockerfile"))
	require.NoError(t, err)
	file := string(data)
	require.Contains(t, file, "ARG GATEWAY_TAGS=nodev")
	require.Contains(t, file, `RUN make build-prod PROD_BIN=/out/gateway PROD_TAGS="$GATEWAY_TAGS" VERSION="$VERSION" REVISION="$REVISION"`)
	require.Regexp(t, `(?m)^ARG VERSION=dev$`, file, "the version gateway version prints comes in as a build argument")
	require.Regexp(t, `(?m)^USER 65532:65532$`, file)
	require.Regexp(t, `(?m)^ENV GATEWAY_LISTEN=0\.0\.0\.0:8080$`, file)
	require.Regexp(t, `(?m)^HEALTHCHECK .*CMD \["/usr/local/bin/gateway", "healthcheck"\]$`, file)
	require.Equal(t, 2, strings.Count(file, "\nFROM "), "multi-stage: a build stage and a runtime stage")

	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^PROD_TAGS \?= nodev$`, string(makefile), "the production build leaves dev out")
	require.Regexp(t, `(?m)^\tCGO_ENABLED=0 \$\(GO\) build -tags '\$\(PROD_TAGS\)' .*-ldflags="\$\(LDFLAGS\)"`, string(makefile))
	require.Regexp(t, `(?m)^LDFLAGS +:= .*-X \$\(BUILDINFO\)\.Version=\$\(or \$\(VERSION\),dev\)`, string(makefile))
	require.Regexp(t, `(?m)^BUILDINFO +:= github\.com/ai-job-gateway/gateway/internal/buildinfo$`, string(makefile), "the package of the version variable")

	ignore, err := os.ReadFile(filepath.Join("..", "..", ".dockerignore"))
	require.NoError(t, err)
	for _, path := range []string{".git", ".data", "bin"} {
		require.Regexp(t, `(?m)^`+regexp.QuoteMeta(path)+`$`, string(ignore))
	}
}

// TestKubernetesManifestsMatchTheAPISchemas decodes every object of
// deploy/k8s strictly into the Kubernetes API's own Go types, as the API
// server would: a misspelled or misplaced field, or a value of the wrong
// type, fails (kubeconform's check, without fetching schemas).
func TestKubernetesManifestsMatchTheAPISchemas(t *testing.T) {
	t.Parallel()
	types := map[string]func() any{
		"v1/Namespace":                           func() any { return &corev1.Namespace{} },
		"v1/ConfigMap":                           func() any { return &corev1.ConfigMap{} },
		"v1/Secret":                              func() any { return &corev1.Secret{} },
		"v1/Service":                             func() any { return &corev1.Service{} },
		"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
		"batch/v1/Job":                           func() any { return &batchv1.Job{} },
		"policy/v1/PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
		"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "k8s", "*.yaml"))
	require.NoError(t, err)
	checked := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			require.NoError(t, k8syaml.Unmarshal([]byte(doc), &head), "%s #%d", file, i)
			if head.Kind == "" || head.Kind == "Kustomization" {
				continue
			}
			newObject, ok := types[head.APIVersion+"/"+head.Kind]
			require.True(t, ok, "%s #%d: %s %s is not a kind this test knows; add it", file, i, head.APIVersion, head.Kind)
			require.NoError(t, k8syaml.UnmarshalStrict([]byte(doc), newObject()), "%s #%d (%s)", file, i, head.Kind)
			checked++
		}
	}
	require.Greater(t, checked, 8)
}

// TestComposeFileMatchesTheComposeSpec loads deploy/docker-compose.yaml as
// `docker compose config` does (compose-go, the compose specification's
// schema and its checks of references between services), with the
// variables it needs from the environment left unset.
func TestComposeFileMatchesTheComposeSpec(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs(filepath.Join("..", "..", "deploy"))
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "docker-compose.yaml"))
	require.NoError(t, err)
	project := loadComposeProject(t, dir, data)
	for _, name := range []string{"postgres", "temporal-schema", "temporal", "temporal-namespace", "idp", "migrate", "api", "worker", "prometheus", "grafana"} {
		_, err := project.GetService(name)
		require.NoError(t, err, name)
	}
	api, err := project.GetService("api")
	require.NoError(t, err)
	require.Equal(t, "http://idp:9000/dev/oidc", *api.Environment["OIDC_ISSUER_URL"], "the idp unless OIDC_ISSUER_URL is set")
}

// loadComposeProject loads a compose file (data, in dir) as `docker
// compose config` does, with the variables it reads unset.
func loadComposeProject(t *testing.T, dir string, data []byte) *composetypes.Project {
	t.Helper()
	project, err := loader.LoadWithContext(context.Background(), composetypes.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []composetypes.ConfigFile{{Filename: "docker-compose.yaml", Content: data}},
		Environment: composetypes.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("gateway", true) })
	require.NoError(t, err)
	return project
}

// removedImages are images their publishers no longer publish: a stack
// that names one does not start on a machine that has not pulled it
// before. A name ending in "/" stands for every image under it.
var removedImages = map[string]string{
	"docker.io/minio/minio": "MinIO's community edition is source-only: its images were removed from Docker Hub in September 2026",
	"docker.io/minio/mc":    "MinIO's community edition is source-only: its images were removed from Docker Hub in September 2026",
	"quay.io/minio/":        "MinIO's community edition is source-only: it publishes no images",
	"docker.io/bitnami/":    "Bitnami moved its versioned images to docker.io/bitnamilegacy, which gets no updates, in 2025",
}

// composeImageProblems lists the images of project that would not pull the
// same thing twice, or not at all: no tag, latest or a tag without a
// version (a digest is fine), not a reference (a variable's default left
// empty), or an image in removedImages. Images the stack builds are left
// out.
func composeImageProblems(project *composetypes.Project) []string {
	built := map[string]bool{}
	for _, svc := range project.Services {
		if svc.Build != nil {
			built[svc.Image] = true
		}
	}
	var problems []string
	for _, name := range project.ServiceNames() {
		svc := project.Services[name]
		if built[svc.Image] {
			continue
		}
		ref, err := reference.ParseNormalizedNamed(svc.Image)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: image %q is not a reference (a variable's default left empty?): %v", name, svc.Image, err))
			continue
		}
		for removed, why := range removedImages {
			if ref.Name() == removed || (strings.HasSuffix(removed, "/") && strings.HasPrefix(ref.Name(), removed)) {
				problems = append(problems, fmt.Sprintf("%s: image %q: %s", name, svc.Image, why))
			}
		}
		if _, ok := ref.(reference.Digested); ok {
			continue
		}
		switch tagged, ok := ref.(reference.Tagged); {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: image %q has no tag: pin a version", name, svc.Image))
		case tagged.Tag() == "latest" || !strings.ContainsAny(tagged.Tag(), "0123456789"):
			problems = append(problems, fmt.Sprintf("%s: image %q: tag %q moves: pin a version", name, svc.Image, tagged.Tag()))
		}
	}
	return problems
}

// TestComposeImagesArePinnedAndPublished checks every image the compose
// stack pulls, with the variables it reads unset (so with their defaults):
// see composeImageProblems, which a made-up stack checks first.
func TestComposeImagesArePinnedAndPublished(t *testing.T) {
	t.Parallel()
	bad := loadComposeProject(t, t.TempDir(), []byte(`
services:
  built: {build: {context: .}, image: local-image}
  uses-built: {image: local-image}
  tagged: {image: "postgres:${POSTGRES_VERSION:-16}"}
  digest: {image: "prom/prometheus@sha256:0000000000000000000000000000000000000000000000000000000000000000"}
  no-tag: {image: grafana/grafana}
  latest: {image: "grafana/grafana:latest"}
  word: {image: "grafana/grafana:stable"}
  empty-default: {image: "temporalio/ui:${TEMPORAL_UI_VERSION:-}"}
  minio: {image: "minio/minio:RELEASE.2025-04-22T22-12-26Z"}
  mc: {image: "quay.io/minio/mc:RELEASE.2025-04-16T18-13-26Z"}
  bitnami: {image: "bitnami/postgresql:16.4.0"}
`))
	problems := composeImageProblems(bad)
	flagged := map[string]bool{}
	for _, p := range problems {
		name, _, _ := strings.Cut(p, ":")
		flagged[name] = true
	}
	require.Equal(t, map[string]bool{"no-tag": true, "latest": true, "word": true, "empty-default": true, "minio": true, "mc": true, "bitnami": true}, flagged, "%s", strings.Join(problems, "\n"))

	dir, err := filepath.Abs(filepath.Join("..", "..", "deploy"))
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "docker-compose.yaml"))
	require.NoError(t, err)
	project := loadComposeProject(t, dir, data)
	require.Empty(t, composeImageProblems(project), "deploy/docker-compose.yaml")
}

// TestComposeTemporalImagesMatchGoMod checks that the stack runs the
// Temporal server (and its admin tools) and the Web UI of the versions in
// go.mod: those `gateway dev` runs and embeds, and the tests run against.
func TestComposeTemporalImagesMatchGoMod(t *testing.T) {
	t.Parallel()
	gomod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	require.NoError(t, err)
	version := func(module string) string {
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(module) + ` v(\S+)`).FindSubmatch(gomod)
		require.NotNil(t, m, "go.mod requires %s", module)
		return string(m[1])
	}
	want := map[string]string{
		"temporalio/server":      version("go.temporal.io/server"),
		"temporalio/admin-tools": version("go.temporal.io/server"),
		"temporalio/ui":          version("github.com/temporalio/ui-server/v2"),
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "deploy"))
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "docker-compose.yaml"))
	require.NoError(t, err)
	seen := map[string]bool{}
	for name, svc := range loadComposeProject(t, dir, data).Services {
		ref, err := reference.ParseNormalizedNamed(svc.Image)
		require.NoError(t, err, name)
		image := reference.FamiliarName(ref)
		if v, ok := want[image]; ok {
			tagged, ok := ref.(reference.Tagged)
			require.True(t, ok, name)
			require.Equal(t, v, tagged.Tag(), "%s: %s", name, image)
			seen[image] = true
		}
	}
	require.Len(t, seen, len(want))
}

// podSecurityRestricted lists what in spec Pod Security admission's
// "restricted" profile (with the baseline's checks it includes) refuses,
// as of Kubernetes 1.35. Stricter than the profile in two ways: the pod
// itself must set seccompProfile RuntimeDefault (rather than each of its
// containers), and it may set no sysctls (the profile allows a few).
func podSecurityRestricted(spec *corev1.PodSpec) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	seLinuxRefused := func(o *corev1.SELinuxOptions) bool {
		return o != nil && (o.User != "" || o.Role != "" ||
			!slices.Contains([]string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}, o.Type))
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		fail("host namespaces")
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap == nil && v.CSI == nil && v.DownwardAPI == nil && v.EmptyDir == nil && v.Ephemeral == nil &&
			v.Image == nil && v.PersistentVolumeClaim == nil && v.Projected == nil && v.Secret == nil {
			fail("volume %s: a type restricted does not allow", v.Name)
		}
	}
	pod := spec.SecurityContext
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	if pod.SeccompProfile == nil || pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		fail("pod: seccompProfile is not RuntimeDefault")
	}
	if pod.RunAsUser != nil && *pod.RunAsUser == 0 {
		fail("pod: runAsUser 0")
	}
	if pod.AppArmorProfile != nil && pod.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
		fail("pod: appArmorProfile Unconfined")
	}
	if seLinuxRefused(pod.SELinuxOptions) {
		fail("pod: seLinuxOptions")
	}
	if pod.WindowsOptions != nil && pod.WindowsOptions.HostProcess != nil && *pod.WindowsOptions.HostProcess {
		fail("pod: Windows hostProcess")
	}
	if len(pod.Sysctls) > 0 {
		fail("pod: sysctls")
	}
	podNonRoot := pod.RunAsNonRoot != nil && *pod.RunAsNonRoot
	check := func(c corev1.Container) {
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			fail("%s: allowPrivilegeEscalation is not false", c.Name)
		}
		if sc.Privileged != nil && *sc.Privileged {
			fail("%s: privileged", c.Name)
		}
		if sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot || sc.RunAsNonRoot == nil && !podNonRoot {
			fail("%s: runAsNonRoot is not true", c.Name)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			fail("%s: runAsUser 0", c.Name)
		}
		if sc.SeccompProfile != nil && sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault && sc.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost {
			fail("%s: seccompProfile %s", c.Name, sc.SeccompProfile.Type)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			fail("%s: capabilities do not drop ALL", c.Name)
		}
		if sc.Capabilities != nil {
			for _, add := range sc.Capabilities.Add {
				if add != "NET_BIND_SERVICE" {
					fail("%s: adds capability %s", c.Name, add)
				}
			}
		}
		if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			fail("%s: procMount %s", c.Name, *sc.ProcMount)
		}
		if sc.AppArmorProfile != nil && sc.AppArmorProfile.Type == corev1.AppArmorProfileTypeUnconfined {
			fail("%s: appArmorProfile Unconfined", c.Name)
		}
		if seLinuxRefused(sc.SELinuxOptions) {
			fail("%s: seLinuxOptions", c.Name)
		}
		if sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && *sc.WindowsOptions.HostProcess {
			fail("%s: Windows hostProcess", c.Name)
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				fail("%s: hostPort %d", c.Name, p.HostPort)
			}
		}
		for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if probe != nil && (probe.HTTPGet != nil && probe.HTTPGet.Host != "" || probe.TCPSocket != nil && probe.TCPSocket.Host != "") {
				fail("%s: a probe names a host", c.Name)
			}
		}
	}
	for _, c := range spec.InitContainers {
		check(c)
	}
	for _, c := range spec.Containers {
		check(c)
	}
	for _, c := range spec.EphemeralContainers {
		check(corev1.Container(c.EphemeralContainerCommon))
	}
	return bad
}

// TestKubernetesPodsPassPodSecurityRestricted checks that every pod
// template of deploy/k8s passes Pod Security "restricted"
// (podSecurityRestricted, which a pod with none of it fails first), and
// that the namespace enforces it.
func TestKubernetesPodsPassPodSecurityRestricted(t *testing.T) {
	t.Parallel()
	var bare corev1.PodSpec
	require.NoError(t, k8syaml.UnmarshalStrict([]byte(`
hostNetwork: true
securityContext: {runAsUser: 0, seLinuxOptions: {type: spc_t}}
volumes: [{name: host, hostPath: {path: /}}]
containers:
  - name: c
    image: x
    ports: [{containerPort: 80, hostPort: 80}]
    securityContext: {capabilities: {add: [NET_ADMIN]}}
`), &bare))
	require.ElementsMatch(t, []string{
		"host namespaces",
		"volume host: a type restricted does not allow",
		"pod: seccompProfile is not RuntimeDefault",
		"pod: runAsUser 0",
		"pod: seLinuxOptions",
		"c: allowPrivilegeEscalation is not false",
		"c: runAsNonRoot is not true",
		"c: capabilities do not drop ALL",
		"c: adds capability NET_ADMIN",
		"c: hostPort 80",
	}, podSecurityRestricted(&bare))

	dir := filepath.Join("..", "..", "deploy", "k8s")
	var kustomization struct {
		Resources []string `yaml:"resources"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &kustomization))
	pods := 0
	enforced := false
	for _, res := range kustomization.Resources {
		data, err := os.ReadFile(filepath.Join(dir, res))
		require.NoError(t, err)
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			var head struct {
				Kind string `json:"kind"`
			}
			require.NoError(t, k8syaml.Unmarshal([]byte(doc), &head), res)
			var template *corev1.PodTemplateSpec
			switch head.Kind {
			case "Namespace":
				var ns corev1.Namespace
				require.NoError(t, k8syaml.UnmarshalStrict([]byte(doc), &ns), res)
				require.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"], "namespace %s enforces restricted", ns.Name)
				enforced = true
			case "Deployment":
				var d appsv1.Deployment
				require.NoError(t, k8syaml.UnmarshalStrict([]byte(doc), &d), res)
				template = &d.Spec.Template
			case "Job":
				var j batchv1.Job
				require.NoError(t, k8syaml.UnmarshalStrict([]byte(doc), &j), res)
				template = &j.Spec.Template
			case "StatefulSet", "DaemonSet", "CronJob", "Pod", "ReplicaSet":
				require.Fail(t, "a kind of pod this test does not read", "%s: %s", res, head.Kind)
			}
			if template != nil {
				pods++
				require.Empty(t, podSecurityRestricted(&template.Spec), "%s: %s", res, head.Kind)
			}
		}
	}
	require.Equal(t, 3, pods, "serve, worker and migrate")
	require.True(t, enforced, "the kustomization's namespace")
}
