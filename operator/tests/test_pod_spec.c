/* test_pod_spec.c - the objects a job needs: its worker pods (from the
 * all-fields example, exactly), the names Kubernetes would refuse, the
 * Service, Secret and NetworkPolicy, and what is read back from pod
 * fixtures (operator/tests/fixtures/pods). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "json_doc.h"
#include "pod_spec.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The name the API server gave the job's Secret, as the status records it. */
#define RING_KEY_SECRET "mnist-ring-key-x7k2q"
#define FIXTURES        "operator/tests/fixtures/"
#define UID             "6f1d2c3b-0000-4000-8000-00000000a11f"
#define OWNER                                                                                      \
	"'ownerReferences': [{'apiVersion': 'training.mwj.io/v1', 'kind': 'MultiWorkerJob', "      \
	"'name': 'mnist', 'uid': 'u-1', 'controller': true, 'blockOwnerDeletion': true}]"
#define LABELS                                                                                     \
	"'labels': {'training.mwj.io/job-name': 'mnist', "                                         \
	"'app.kubernetes.io/managed-by': 'mwj-operator'}"

/* --- Helpers --- */

/* A YAML scalar as JSON: plain true/false/null and integers typed, the
 * rest (and every quoted scalar) a string, as Kubernetes reads manifests. */
static cJSON *yaml_scalar(const yaml_node_t *n)
{
	const char *s = (const char *)n->data.scalar.value;
	char *end = NULL;
	long long v;

	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return cJSON_CreateString(s);
	if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
		return cJSON_CreateBool(s[0] == 't');
	if (strcmp(s, "null") == 0 || strcmp(s, "~") == 0 || s[0] == '\0')
		return cJSON_CreateNull();
	v = strtoll(s, &end, 10);
	if (end != s && *end == '\0')
		return cJSON_CreateNumber((double)v);
	return cJSON_CreateString(s);
}

static cJSON *yaml_json(yaml_document_t *doc, const yaml_node_t *n)
{
	cJSON *out;

	if (n->type == YAML_SCALAR_NODE)
		return yaml_scalar(n);
	if (n->type == YAML_SEQUENCE_NODE) {
		out = cJSON_CreateArray();
		for (yaml_node_item_t *i = n->data.sequence.items.start;
		     i < n->data.sequence.items.top; i++)
			cJSON_AddItemToArray(out, yaml_json(doc, yaml_document_get_node(doc, *i)));
		return out;
	}
	out = cJSON_CreateObject();
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		const yaml_node_t *key = yaml_document_get_node(doc, p->key);

		cJSON_AddItemToObject(out, (const char *)key->data.scalar.value,
		                      yaml_json(doc, yaml_document_get_node(doc, p->value)));
	}
	return out;
}

/* The first document of the YAML file at path, as JSON. */
static cJSON *load_yaml(const char *path)
{
	FILE *f = fopen(path, "rb");
	yaml_parser_t parser;
	yaml_document_t doc;
	cJSON *out;

	if (f == NULL)
		fail_msg("open '%s' (tests run from the repository root)", path);
	assert_true(yaml_parser_initialize(&parser));
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc) || yaml_document_get_root_node(&doc) == NULL)
		fail_msg("'%s' is not YAML", path);
	out = yaml_json(&doc, yaml_document_get_root_node(&doc));
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	fclose(f);
	return out;
}

/* Fails unless got and want are equal, printing both. */
static void assert_same(const cJSON *got, const cJSON *want)
{
	if (!cJSON_Compare(got, want, 1)) {
		char *g = cJSON_Print(got);
		char *w = cJSON_Print(want);

		fail_msg("got\n%s\nwant\n%s", g, w);
	}
}

static void assert_json_equal(const cJSON *got, const char *want)
{
	cJSON *w = json_doc_parse(want);

	assert_same(got, w);
	cJSON_Delete(w);
}

/* A job "ml/mnist" (uid u-1) with spec members spec_members, parsed into
 * j. The caller deletes the returned object after releasing j. */
static cJSON *make_job(struct job *j, const char *spec_members)
{
	char text[4096];
	char err[ERR_LEN] = "";
	cJSON *obj;

	snprintf(text, sizeof(text),
	         "{'metadata': {'name': 'mnist', 'namespace': 'ml', 'uid': 'u-1'}, 'spec': {%s}}",
	         spec_members);
	obj = json_doc_parse(text);
	if (job_parse(j, obj, err) != 0)
		fail_msg("job_parse: %s", err);
	snprintf(j->status.ring_key_secret, JOB_NAME_LEN, "%s", RING_KEY_SECRET);
	return obj;
}

/* The worker pod's container named name. */
static const cJSON *container(const cJSON *pod, const char *name)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "containers"))
	{
		if (strcmp(cJSON_GetObjectItem(c, "name")->valuestring, name) == 0)
			return c;
	}
	fail_msg("no container '%s'", name);
	return NULL;
}

/* The value of env name in container c, or NULL; fails if it is there
 * twice. */
static const char *env_value(const cJSON *c, const char *name)
{
	const char *found = NULL;
	const cJSON *e;

	cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "env"))
	{
		const cJSON *v = cJSON_GetObjectItem(e, "value");

		if (strcmp(cJSON_GetObjectItem(e, "name")->valuestring, name) != 0)
			continue;
		if (found != NULL)
			fail_msg("env '%s' is set twice", name);
		found = cJSON_IsString(v) ? v->valuestring : "(valueFrom)";
	}
	return found;
}

/* --- The worker pod --- */

static void test_pod_spec_gives_the_chief_alone_what_it_reports_with(void **state)
{
	static const struct job_reporting reporting = {
	    .url_base = "https://mwj-operator-status.mwj-system.svc:8443",
	    .audience = "mwj-operator",
	    .ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"};
	cJSON *obj, *chief, *worker, *cm, *want;
	char err[ERR_LEN] = "";
	struct job j;

	(void)state;
	obj = make_job(&j, "'workers': 2, 'template': {'spec': {'containers': [{'name': 'worker', "
	                   "'image': 'w:1'}]}}");
	j.reporting = &reporting;
	/* Not before the CA's ConfigMap is made. */
	assert_null(pod_spec_pod(&j, 0, 0, err));
	assert_string_equal(err, "job 'ml/mnist': its status CA ConfigMap is not made yet");
	cm = pod_spec_status_ca_map(&j);
	want = json_doc_parse("{'apiVersion': 'v1', 'kind': 'ConfigMap', 'data': {'ca.crt': "
	                      "'-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END "
	                      "CERTIFICATE-----\\n'}}");
	assert_same(cJSON_GetObjectItem(cm, "data"), cJSON_GetObjectItem(want, "data"));
	assert_string_equal(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(cm, "metadata"), "generateName")->valuestring,
	    "mnist-status-ca-");
	snprintf(j.status.status_ca_map, JOB_NAME_LEN, "mnist-status-ca-x7k2q");
	chief = pod_spec_pod(&j, 0, 0, err);
	worker = pod_spec_pod(&j, 1, 0, err);
	assert_non_null(chief);
	assert_non_null(worker);
	assert_string_equal(env_value(container(chief, "worker"), "MWJ_STATUS_URL"),
	                    "https://mwj-operator-status.mwj-system.svc:8443/apis/training.mwj.io/"
	                    "v1/namespaces/ml/multiworkerjobs/mnist/status");
	assert_string_equal(env_value(container(chief, "worker"), "MWJ_STATUS_CA_FILE"),
	                    "/var/run/mwj/status/ca.crt");
	assert_string_equal(env_value(container(chief, "worker"), "MWJ_STATUS_TOKEN_FILE"),
	                    "/var/run/mwj/status/token");
	assert_null(env_value(container(worker, "worker"), "MWJ_STATUS_URL"));
	cJSON_Delete(want);
	want = json_doc_parse(
	    "{'name': 'mwj-status', 'projected': {'sources': [{'serviceAccountToken': {'audience': "
	    "'mwj-operator', 'expirationSeconds': 3600, 'path': 'token'}}, {'configMap': {'name': "
	    "'mnist-status-ca-x7k2q', 'items': [{'key': 'ca.crt', 'path': 'ca.crt'}]}}]}}");
	{
		const cJSON *v, *found = NULL;

		cJSON_ArrayForEach(
		    v, cJSON_GetObjectItem(cJSON_GetObjectItem(chief, "spec"), "volumes"))
		{
			if (strcmp(cJSON_GetObjectItem(v, "name")->valuestring, "mwj-status") == 0)
				found = v;
		}
		assert_non_null(found);
		assert_same(found, want);
		cJSON_ArrayForEach(
		    v, cJSON_GetObjectItem(cJSON_GetObjectItem(worker, "spec"), "volumes"))
		{
			assert_string_not_equal(cJSON_GetObjectItem(v, "name")->valuestring,
			                        "mwj-status");
		}
	}
	cJSON_Delete(want);
	cJSON_Delete(cm);
	cJSON_Delete(chief);
	cJSON_Delete(worker);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_pod_spec_builds_the_all_fields_example_worker_pod_exactly(void **state)
{
	cJSON *obj = load_yaml("examples/all-fields.yaml");
	cJSON *want = json_doc_load(FIXTURES "pod_spec/all-fields-worker-1.json");
	cJSON *meta = cJSON_GetObjectItem(obj, "metadata");
	const cJSON *tmpl_sidecar;
	char err[ERR_LEN] = "";
	struct job j;
	cJSON *pod;

	(void)state;
	cJSON_AddStringToObject(meta, "namespace", "ml");
	cJSON_AddStringToObject(meta, "uid", UID);
	assert_int_equal(job_parse(&j, obj, err), 0);
	assert_string_equal(j.invalid, "");
	snprintf(j.status.ring_key_secret, JOB_NAME_LEN, "%s", RING_KEY_SECRET);
	pod = pod_spec_pod(&j, 1, 2, err);
	if (getenv("MWJ_WRITE_FIXTURE")) {
		char *text = cJSON_Print(pod);
		puts(text);
		free(text);
	}
	assert_non_null(pod);
	assert_same(pod, want);
	/* The sidecar is the template's, untouched. */
	tmpl_sidecar = cJSON_GetArrayItem(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(j.template, "spec"), "containers"), 0);
	assert_same(container(pod, "sidecar"), tmpl_sidecar);
	/* The template itself is left as it was: pods are built from copies. */
	assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j.template, "spec"), "volumes"));
	assert_null(pod_spec_restart_policy_overridden(&j));
	cJSON_Delete(pod);
	job_release(&j);
	cJSON_Delete(want);
	cJSON_Delete(obj);
}

static void test_pod_spec_tf_config_names_every_worker_through_the_service(void **state)
{
	struct job j;
	cJSON *obj = make_job(&j, "'workers': 3, 'template': {'spec': {'containers': "
	                          "[{'name': 'worker', 'image': 'w'}]}}");
	char err[ERR_LEN] = "";
	cJSON *pod = pod_spec_pod(&j, 2, 0, err);

	(void)state;
	assert_non_null(pod);
	assert_string_equal(env_value(container(pod, "worker"), "TF_CONFIG"),
	                    "{\"cluster\":{\"worker\":[\"mnist-worker-0.mnist.ml.svc:2222\","
	                    "\"mnist-worker-1.mnist.ml.svc:2222\",\"mnist-worker-2.mnist.ml.svc:"
	                    "2222\"]},\"task\":{\"type\":\"worker\",\"index\":2}}");
	assert_string_equal(env_value(container(pod, "worker"), "MWJ_WORKER_INDEX"), "2");
	assert_string_equal(env_value(container(pod, "worker"), "MWJ_RESTART_ATTEMPT"), "0");
	/* Without a checkpoint volume there is no backup folder. */
	assert_null(env_value(container(pod, "worker"), "MWJ_BACKUP_DIR"));
	cJSON_Delete(pod);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_pod_spec_forces_restart_policy_never_and_says_when_it_differed(void **state)
{
	static const struct {
		const char *policy; /* the template's, NULL: unset */
		const char *warn;   /* what pod_spec_restart_policy_overridden says */
	} cases[] = {
	    {NULL, NULL},
	    {"Never", NULL},
	    {"OnFailure", "OnFailure"},
	    {"Always", "Always"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char spec[512], err[ERR_LEN] = "";
		const cJSON *got;
		struct job j;
		cJSON *obj, *pod;
		const char *warn;

		snprintf(spec, sizeof(spec),
		         "'workers': 1, 'template': {'spec': {%s%s%s'containers': "
		         "[{'name': 'worker', 'image': 'w'}]}}",
		         cases[i].policy ? "'restartPolicy': '" : "",
		         cases[i].policy ? cases[i].policy : "", cases[i].policy ? "', " : "");
		obj = make_job(&j, spec);
		pod = pod_spec_pod(&j, 0, 0, err);
		got = cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "restartPolicy");
		assert_string_equal(got->valuestring, "Never");
		warn = pod_spec_restart_policy_overridden(&j);
		if ((warn == NULL) != (cases[i].warn == NULL) ||
		    (warn != NULL && strcmp(warn, cases[i].warn) != 0))
			fail_msg("template restartPolicy %s: overridden '%s', want '%s'",
			         cases[i].policy ? cases[i].policy : "unset",
			         warn ? warn : "(none)", cases[i].warn ? cases[i].warn : "(none)");
		cJSON_Delete(pod);
		job_release(&j);
		cJSON_Delete(obj);
	}
}

static void test_pod_spec_uses_the_first_container_when_none_is_named_worker(void **state)
{
	struct job j;
	cJSON *obj =
	    make_job(&j, "'workers': 2, 'template': {'spec': {'containers': "
	                 "[{'name': 'main', 'image': 'w'}, {'name': 'other', 'image': 'b'}]}}");
	char err[ERR_LEN] = "";
	cJSON *pod = pod_spec_pod(&j, 0, 0, err);

	(void)state;
	assert_non_null(env_value(container(pod, "main"), "TF_CONFIG"));
	assert_non_null(cJSON_GetObjectItem(container(pod, "main"), "ports"));
	assert_json_equal(container(pod, "other"), "{'name': 'other', 'image': 'b'}");
	cJSON_Delete(pod);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_pod_spec_operator_env_overrides_the_users_same_named_entries(void **state)
{
	struct job j;
	cJSON *obj = make_job(
	    &j, "'workers': 2, 'template': {'spec': {'containers': [{'name': 'worker', 'image': "
	        "'w', 'env': [{'name': 'MWJ_WORKER_INDEX', 'value': '9'}, {'name': 'KEEP', "
	        "'value': 'x'}, {'name': 'TF_CONFIG', 'valueFrom': {'configMapKeyRef': {'name': "
	        "'c', 'key': 'k'}}}, {'name': 'MWJ_BACKUP_DIR', 'value': '/mine'}]}]}}");
	char err[ERR_LEN] = "";
	cJSON *pod = pod_spec_pod(&j, 1, 4, err);
	const cJSON *w = container(pod, "worker");
	const cJSON *last = cJSON_GetArrayItem(
	    cJSON_GetObjectItem(w, "env"), cJSON_GetArraySize(cJSON_GetObjectItem(w, "env")) - 2);

	(void)state;
	assert_string_equal(env_value(w, "MWJ_WORKER_INDEX"), "1");
	assert_string_equal(env_value(w, "MWJ_RESTART_ATTEMPT"), "4");
	assert_string_equal(env_value(w, "MWJ_NUM_WORKERS"), "2");
	assert_string_equal(env_value(w, "MWJ_JOB_NAME"), "mnist");
	assert_string_equal(env_value(w, "MWJ_JOB_SECRET_FILE"), "/var/run/secrets/mwj/key");
	assert_true(strncmp(env_value(w, "TF_CONFIG"), "{\"cluster\"", 10) == 0);
	/* The user's other entries stay, after the operator's, in order; an
	 * operator name the operator does not set here stays the user's. */
	assert_string_equal(env_value(w, "KEEP"), "x");
	assert_string_equal(env_value(w, "MWJ_BACKUP_DIR"), "/mine");
	assert_json_equal(last, "{'name': 'KEEP', 'value': 'x'}");
	cJSON_Delete(pod);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_pod_spec_keeps_a_users_ring_port_or_adds_one(void **state)
{
	static const struct {
		const char *ports, *want;
	} cases[] = {
	    {"", "[{'name': 'ring', 'containerPort': 2222, 'protocol': 'TCP'}]"},
	    {"'ports': [{'name': 'grpc', 'containerPort': 2222}], ",
	     "[{'name': 'grpc', 'containerPort': 2222}]"},
	    {"'ports': [{'containerPort': 2222, 'protocol': 'TCP'}], ",
	     "[{'containerPort': 2222, 'protocol': 'TCP'}]"},
	    {"'ports': [{'name': 'ring', 'containerPort': 8080}], ",
	     "[{'name': 'ring', 'containerPort': 8080}, {'containerPort': 2222, 'protocol': "
	     "'TCP'}]"},
	    {"'ports': [{'name': 'dns', 'containerPort': 2222, 'protocol': 'UDP'}], ",
	     "[{'name': 'dns', 'containerPort': 2222, 'protocol': 'UDP'}, "
	     "{'name': 'ring', 'containerPort': 2222, 'protocol': 'TCP'}]"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char spec[512], err[ERR_LEN] = "";
		struct job j;
		cJSON *obj, *pod;

		snprintf(spec, sizeof(spec),
		         "'workers': 1, 'metricsPort': 0, 'template': {'spec': {'containers': [{%s"
		         "'name': 'worker', 'image': 'w'}]}}",
		         cases[i].ports);
		obj = make_job(&j, spec);
		pod = pod_spec_pod(&j, 0, 0, err);
		assert_json_equal(cJSON_GetObjectItem(container(pod, "worker"), "ports"),
		                  cases[i].want);
		cJSON_Delete(pod);
		job_release(&j);
		cJSON_Delete(obj);
	}
}

static void test_pod_spec_serves_metrics_on_the_metrics_port_and_says_so(void **state)
{
	char err[ERR_LEN] = "";
	struct job j;
	cJSON *obj, *pod;
	const cJSON *w;

	(void)state;
	/* The default: 9100, declared, announced; the template's own scrape
	 * annotation and a port of its own under the name are kept. */
	obj = make_job(&j, "'workers': 1, 'template': {'metadata': {'annotations': "
	                   "{'prometheus.io/scrape': 'false'}}, 'spec': {'containers': [{'name': "
	                   "'worker', 'image': 'w', 'ports': [{'name': 'metrics', 'containerPort': "
	                   "8000}]}]}}");
	pod = pod_spec_pod(&j, 0, 0, err);
	w = container(pod, "worker");
	assert_string_equal(env_value(w, "MWJ_METRICS_ADDR"), ":9100");
	assert_json_equal(cJSON_GetObjectItem(w, "ports"),
	                  "[{'name': 'metrics', 'containerPort': 8000}, {'name': 'ring', "
	                  "'containerPort': 2222, 'protocol': 'TCP'}, {'containerPort': 9100, "
	                  "'protocol': 'TCP'}]");
	assert_json_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "annotations"),
	                  "{'training.mwj.io/restart-attempt': '0', 'prometheus.io/scrape': "
	                  "'false', 'prometheus.io/port': '9100', 'prometheus.io/path': "
	                  "'/metrics'}");
	cJSON_Delete(pod);
	job_release(&j);
	cJSON_Delete(obj);
	/* 0: no metrics, no port, no annotations. */
	obj = make_job(&j, "'workers': 1, 'metricsPort': 0, 'template': {'spec': {'containers': "
	                   "[{'name': 'worker', 'image': 'w'}]}}");
	pod = pod_spec_pod(&j, 0, 0, err);
	w = container(pod, "worker");
	assert_null(env_value(w, "MWJ_METRICS_ADDR"));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(w, "ports")), 1);
	assert_json_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "metadata"), "annotations"),
	                  "{'training.mwj.io/restart-attempt': '0'}");
	cJSON_Delete(pod);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_pod_spec_mounts_its_volumes_in_place_of_the_users_of_the_same_name(void **state)
{
	struct job j;
	cJSON *obj =
	    make_job(&j, "'workers': 1, 'checkpoint': {'mountPath': '/ckpt//', 'volume': "
	                 "{'persistentVolumeClaim': {'claimName': 'c'}}}, 'template': {'spec': {"
	                 "'volumes': [{'name': 'data', 'emptyDir': {}}, {'name': 'mwj-checkpoint', "
	                 "'emptyDir': {}}], 'containers': [{'name': 'worker', 'image': 'w', "
	                 "'volumeMounts': [{'name': 'data', 'mountPath': '/data'}, {'name': 'old', "
	                 "'mountPath': '/ckpt//'}]}]}}");
	char err[ERR_LEN] = "";
	cJSON *pod = pod_spec_pod(&j, 0, 0, err);

	(void)state;
	assert_json_equal(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), "volumes"),
	    "[{'name': 'data', 'emptyDir': {}}, "
	    "{'name': 'mwj-ring-key', 'secret': {'secretName': 'mnist-ring-key-x7k2q', "
	    "'defaultMode': 256}}, "
	    "{'name': 'mwj-checkpoint', 'persistentVolumeClaim': {'claimName': 'c'}}]");
	assert_json_equal(cJSON_GetObjectItem(container(pod, "worker"), "volumeMounts"),
	                  "[{'name': 'data', 'mountPath': '/data'}, "
	                  "{'name': 'mwj-ring-key', 'mountPath': '/var/run/secrets/mwj', "
	                  "'readOnly': true}, {'name': 'mwj-checkpoint', 'mountPath': '/ckpt//'}]");
	/* A trailing '/' of the mount path does not double in the folder. */
	assert_string_equal(env_value(container(pod, "worker"), "MWJ_BACKUP_DIR"),
	                    "/ckpt/ml/mnist");
	cJSON_Delete(pod);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_pod_spec_refuses_a_template_without_containers_or_a_bad_index(void **state)
{
	char err[ERR_LEN] = "";
	struct job j;
	cJSON *obj = make_job(&j, "'workers': 2, 'template': {'spec': {'containers': []}}");

	(void)state;
	assert_non_null(strstr(j.invalid, "'spec.template.spec.containers' is empty"));
	assert_null(pod_spec_pod(&j, 0, 0, err));
	assert_string_equal(err, "job 'ml/mnist': the pod template has no containers");
	job_release(&j);
	cJSON_Delete(obj);
	obj = make_job(&j, "'workers': 2, 'template': {'spec': {'containers': [{'name': 'w'}]}}");
	assert_null(pod_spec_pod(&j, 2, 0, err));
	assert_string_equal(err, "job 'ml/mnist': worker index 2 is out of range [0, 1]");
	assert_null(pod_spec_pod(&j, -1, 0, err));
	job_release(&j);
	cJSON_Delete(obj);
}

/* --- Names --- */

static void test_pod_spec_check_names_refuses_names_too_long_at_the_exact_boundary(void **state)
{
	/* The longest pod name, "<job>-worker-<workers - 1>", must be a
	 * 63-character hostname: 8 characters of "-worker-" and the index. */
	static const struct {
		int workers, max;
	} cases[] = {
	    {1, 54},   {3, 54},    {10, 54},   {11, 53},   {100, 53},
	    {101, 52}, {1000, 52}, {1001, 51}, {4096, 51},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char why[ERR_LEN], want[ERR_LEN], pod[JOB_NAME_LEN];
		struct job j;

		memset(&j, 0, sizeof(j));
		j.workers = cases[i].workers;
		memset(j.name, 'a', (size_t)cases[i].max);
		if (pod_spec_check_names(&j, why) != 0)
			fail_msg("%d workers, %d characters: refused: %s", j.workers, cases[i].max,
			         why);
		pod_spec_pod_name(&j, j.workers - 1, pod);
		assert_int_equal(strlen(pod), 63);
		j.name[cases[i].max] = 'a';
		snprintf(want, sizeof(want),
		         "job name '%s' is too long (%d characters): a worker's pod name "
		         "'<job>-worker-<index>' is its hostname, which can have at most 63 "
		         "characters, so with %d worker%s the job name can have at most %d",
		         j.name, cases[i].max + 1, j.workers, j.workers == 1 ? "" : "s",
		         cases[i].max);
		assert_int_equal(pod_spec_check_names(&j, why), -1);
		assert_string_equal(why, want);
	}
}

static void test_pod_spec_check_names_refuses_names_that_cannot_name_a_service(void **state)
{
	static const char *const bad[] = {"1mnist", "mnist.v2", "mnist-", "-mnist", "mnist_v2"};
	static const char *const good[] = {"m", "mnist", "mnist-v2", "m1-2-3"};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		char why[ERR_LEN] = "";
		struct job j;

		memset(&j, 0, sizeof(j));
		j.workers = 2;
		snprintf(j.name, sizeof(j.name), "%s", bad[i]);
		if (pod_spec_check_names(&j, why) != -1 ||
		    strstr(why,
		           "cannot name the job's Service: it must consist of lower-case "
		           "letters, digits and '-', start with a letter and end with a letter "
		           "or digit (a DNS-1035 label)") == NULL)
			fail_msg("'%s': '%s'", bad[i], why);
	}
	for (size_t i = 0; i < ARRAY_LEN(good); i++) {
		char why[ERR_LEN] = "";
		struct job j;

		memset(&j, 0, sizeof(j));
		j.workers = 4096;
		snprintf(j.name, sizeof(j.name), "%s", good[i]);
		if (pod_spec_check_names(&j, why) != 0)
			fail_msg("'%s' refused: %s", good[i], why);
	}
}

/* --- The Service, Secret and NetworkPolicy --- */

static void test_pod_spec_builds_the_headless_service_exactly(void **state)
{
	struct job j;
	cJSON *obj = make_job(&j, "'workers': 2, 'port': 4444, 'template': {'spec': "
	                          "{'containers': [{'name': 'worker'}]}}");
	cJSON *svc = pod_spec_service(&j);

	(void)state;
	assert_json_equal(svc, "{'apiVersion': 'v1', 'kind': 'Service', 'metadata': {"
	                       "'name': 'mnist', 'namespace': 'ml', " LABELS ", " OWNER "}, "
	                       "'spec': {'clusterIP': 'None', 'publishNotReadyAddresses': true, "
	                       "'selector': {'training.mwj.io/job-name': 'mnist'}, "
	                       "'ports': [{'name': 'ring', 'port': 4444, 'targetPort': 4444, "
	                       "'protocol': 'TCP'}]}}");
	cJSON_Delete(svc);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_pod_spec_builds_the_ring_key_secret_exactly(void **state)
{
	unsigned char key[RING_KEY_BYTES];
	struct job j;
	cJSON *obj = make_job(&j, "'workers': 2, 'template': {'spec': "
	                          "{'containers': [{'name': 'worker'}]}}");
	cJSON *secret;

	(void)state;
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)(i * 8);
	secret = pod_spec_secret(&j, key, sizeof(key));
	assert_json_equal(secret,
	                  "{'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {"
	                  "'generateName': 'mnist-ring-key-', 'namespace': 'ml', " LABELS ", " OWNER
	                  "}, 'type': 'Opaque', "
	                  "'data': {'key': 'AAgQGCAoMDhASFBYYGhweICIkJigqLC4wMjQ2ODo8Pg='}}");
	cJSON_Delete(secret);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_pod_spec_builds_the_network_policy_exactly(void **state)
{
	struct job j;
	cJSON *obj = make_job(&j, "'workers': 2, 'template': {'spec': "
	                          "{'containers': [{'name': 'worker'}]}}");
	cJSON *np = pod_spec_network_policy(&j);

	(void)state;
	assert_json_equal(
	    np, "{'apiVersion': 'networking.k8s.io/v1', 'kind': 'NetworkPolicy', 'metadata': {"
	        "'name': 'mnist-ring', 'namespace': 'ml', " LABELS ", " OWNER "}, 'spec': {"
	        "'podSelector': {'matchLabels': {'training.mwj.io/job-name': 'mnist'}}, "
	        "'policyTypes': ['Ingress'], 'ingress': [{'from': [{'podSelector': "
	        "{'matchLabels': {'training.mwj.io/job-name': 'mnist'}}}], "
	        "'ports': [{'protocol': 'TCP', 'port': 2222}]}, "
	        "{'ports': [{'protocol': 'TCP', 'port': 1, 'endPort': 2221}, "
	        "{'protocol': 'TCP', 'port': 2223, 'endPort': 65535}, "
	        "{'protocol': 'UDP', 'port': 1, 'endPort': 65535}, "
	        "{'protocol': 'SCTP', 'port': 1, 'endPort': 65535}]}]}}");
	cJSON_Delete(np);
	job_release(&j);
	cJSON_Delete(obj);

	/* A ring on the last port leaves no range above it. */
	obj = make_job(&j, "'workers': 2, 'port': 65535, 'template': {'spec': "
	                   "{'containers': [{'name': 'worker'}]}}");
	np = pod_spec_network_policy(&j);
	assert_json_equal(
	    cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(np, "spec"), "ingress"), 1),
	    "{'ports': [{'protocol': 'TCP', 'port': 1, 'endPort': 65534}, "
	    "{'protocol': 'UDP', 'port': 1, 'endPort': 65535}, "
	    "{'protocol': 'SCTP', 'port': 1, 'endPort': 65535}]}");
	cJSON_Delete(np);
	job_release(&j);
	cJSON_Delete(obj);
}

/* --- Reading pods back --- */

static void test_pod_view_parse_reads_the_pod_fixtures(void **state)
{
	static const struct {
		const char *file;
		const char *name;
		long attempt;
		int index;
		enum pod_phase phase;
		int ready, deleting, disrupted;
		int exit_code;
		const char *status_reason;
		const char *reason, *waiting_reason, *waiting_message;
		long long created_s;
	} cases[] = {
	    {"pending-errimagepull", "mnist-worker-0", 0, 0, POD_PENDING, 0, 0, 0, -1, "", "",
	     "ErrImagePull", "rpc error: code = NotFound desc = failed to pull", 1795568523},
	    /* The sidecar's exit is not the worker's. */
	    {"running-ready", "mnist-worker-1", 3, 1, POD_RUNNING, 1, 0, 0, -1, "", "", "", "",
	     1795568524},
	    {"succeeded", "mnist-worker-0", 1, 0, POD_SUCCEEDED, 0, 0, 0, 0, "", "Completed", "",
	     "", 1795568523},
	    /* The worker container is the first when none is named "worker". */
	    {"failed-oomkilled", "mnist-worker-2", 0, 2, POD_FAILED, 0, 0, 0, 137, "", "OOMKilled",
	     "", "", 1795568523},
	    {"evicted", "mnist-worker-1", 2, 1, POD_FAILED, 0, 0, 1, 137, "Evicted", "Error", "",
	     "", 1795568523},
	    {"disruption-target", "mnist-worker-3", 0, 3, POD_RUNNING, 1, 0, 1, -1, "", "", "", "",
	     1795568523},
	    {"deleting", "mnist-worker-0", 5, 0, POD_RUNNING, 1, 1, 0, -1, "", "", "", "",
	     1795568523},
	    /* The worker has ended, a sidecar runs on: the worker decides. */
	    {"running-worker-done-beside-sidecar", "mnist-worker-1", 3, 1, POD_SUCCEEDED, 0, 0, 0,
	     0, "", "Completed", "", "", 1795568524},
	};
	struct job j;
	cJSON *obj = make_job(&j, "'workers': 4, 'template': {'spec': "
	                          "{'containers': [{'name': 'worker'}]}}");

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char path[256], err[ERR_LEN] = "";
		struct pod_view p;
		cJSON *pod;

		snprintf(path, sizeof(path), FIXTURES "pods/%s.json", cases[i].file);
		pod = json_doc_load(path);
		if (pod_view_parse(&p, &j, pod, err) != 0)
			fail_msg("%s: %s", cases[i].file, err);
		if (strcmp(p.name, cases[i].name) != 0 || p.index != cases[i].index ||
		    p.attempt != cases[i].attempt || p.phase != cases[i].phase ||
		    p.ready != cases[i].ready || p.deleting != cases[i].deleting ||
		    p.disrupted != cases[i].disrupted ||
		    strcmp(p.status_reason, cases[i].status_reason) != 0 ||
		    p.exit_code != cases[i].exit_code || strcmp(p.reason, cases[i].reason) != 0 ||
		    strcmp(p.waiting_reason, cases[i].waiting_reason) != 0 ||
		    strncmp(p.waiting_message, cases[i].waiting_message,
		            strlen(cases[i].waiting_message)) != 0 ||
		    p.created_s != cases[i].created_s)
			fail_msg(
			    "%s: name %s, index %d, attempt %ld, phase %d, ready %d, deleting %d, "
			    "disrupted %d, status reason '%s', exit %d, reason '%s', waiting "
			    "'%s' '%s', created %lld",
			    cases[i].file, p.name, p.index, p.attempt, (int)p.phase, p.ready,
			    p.deleting, p.disrupted, p.status_reason, p.exit_code, p.reason,
			    p.waiting_reason, p.waiting_message, p.created_s);
		assert_true(strncmp(p.uid, "0b6a1c2e-", 9) == 0);
		/* Only a pod a sidecar holds must be deleted for it to stop. */
		assert_int_equal(p.held, strstr(cases[i].file, "sidecar") != NULL);
		cJSON_Delete(pod);
	}
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_pod_view_parse_reads_malformed_marks_as_unknown(void **state)
{
	static const struct {
		const char *index, *attempt;
		int want_index;
		long want_attempt;
	} cases[] = {
	    {"'7'", "'12'", 7, 12},      {"'x'", "'abc'", -1, -1}, {"'-1'", "'-1'", -1, -1},
	    {"'4096'", "'1e3'", -1, -1}, {"' 1'", "' 1'", -1, -1}, {"3", "3", -1, -1},
	    {"'4095'", "'0'", 4095, 0},  {"''", "''", -1, -1},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char text[512], err[ERR_LEN] = "";
		struct pod_view p;
		cJSON *pod;

		snprintf(
		    text, sizeof(text),
		    "{'metadata': {'name': 'p', 'labels': {'training.mwj.io/replica-index': %s}, "
		    "'annotations': {'training.mwj.io/restart-attempt': %s}, "
		    "'creationTimestamp': 'now'}, 'status': {'phase': 'Exploded', "
		    "'conditions': {'type': 'Ready', 'status': 'True'}, "
		    "'containerStatuses': [{'name': 'worker', 'state': {'terminated': "
		    "{'exitCode': -4}}}]}}",
		    cases[i].index, cases[i].attempt);
		pod = json_doc_parse(text);
		assert_int_equal(pod_view_parse(&p, NULL, pod, err), 0);
		if (p.index != cases[i].want_index || p.attempt != cases[i].want_attempt)
			fail_msg("index %s, attempt %s: %d, %ld", cases[i].index, cases[i].attempt,
			         p.index, p.attempt);
		assert_int_equal(p.phase, POD_UNKNOWN);
		assert_false(p.ready);
		assert_int_equal(p.exit_code, -1);
		assert_int_equal(p.created_s, 0);
		cJSON_Delete(pod);
	}
}

static void test_pod_view_parse_refuses_a_pod_without_a_name(void **state)
{
	static const char *const docs[] = {"{}", "{'metadata': {}}", "{'metadata': {'name': 5}}",
	                                   "{'metadata': {'name': ''}}", "[]"};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(docs); i++) {
		char err[ERR_LEN] = "";
		cJSON *pod = json_doc_parse(docs[i]);
		struct pod_view p;

		assert_int_equal(pod_view_parse(&p, NULL, pod, err), -1);
		assert_string_equal(err, "pod without a name");
		cJSON_Delete(pod);
	}
}

/* --- Least privilege, large clusters, mounts --- */

static const cJSON *pod_spec_member(const cJSON *pod, const char *name)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(pod, "spec"), name);
}

static void test_pod_spec_gives_the_worker_no_token_unless_asked(void **state)
{
	static const struct {
		const char *template_value; /* the template's automountServiceAccountToken */
		int want;
	} cases[] = {{NULL, 0}, {"true", 1}, {"false", 0}};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char spec[512], err[ERR_LEN] = "";
		struct job j;
		cJSON *obj, *pod;

		snprintf(spec, sizeof(spec),
		         "'workers': 1, 'template': {'spec': {%s%s%s'containers': [{'name': "
		         "'worker', 'image': 'w'}]}}",
		         cases[i].template_value ? "'automountServiceAccountToken': " : "",
		         cases[i].template_value ? cases[i].template_value : "",
		         cases[i].template_value ? ", " : "");
		obj = make_job(&j, spec);
		pod = pod_spec_pod(&j, 0, 0, err);
		assert_non_null(pod);
		assert_int_equal(cJSON_IsTrue(pod_spec_member(pod, "automountServiceAccountToken")),
		                 cases[i].want);
		assert_true(cJSON_IsBool(pod_spec_member(pod, "automountServiceAccountToken")));
		cJSON_Delete(pod);
		job_release(&j);
		cJSON_Delete(obj);
	}
}

/* The key's file is 0400: a non-root worker reads it through fsGroup. */
static void test_pod_spec_mounts_the_ring_key_0400_with_a_group_that_can_read_it(void **state)
{
	static const struct {
		const char *pod_sc, *container_sc; /* securityContext members, or "" */
		const char *want;                  /* the pod's securityContext, or NULL */
	} cases[] = {
	    /* Nothing said: the worker image's user and group. */
	    {"", "", "{'fsGroup': 65532, 'fsGroupChangePolicy': 'OnRootMismatch'}"},
	    /* The user's own fsGroup and policy stay. */
	    {"'fsGroup': 7, 'fsGroupChangePolicy': 'Always'", "",
	     "{'fsGroup': 7, 'fsGroupChangePolicy': 'Always'}"},
	    /* The worker's group, the container's over the pod's. */
	    {"'runAsUser': 1000, 'runAsGroup': 2000", "",
	     "{'runAsUser': 1000, 'runAsGroup': 2000, 'fsGroup': 2000, "
	     "'fsGroupChangePolicy': 'OnRootMismatch'}"},
	    {"'runAsGroup': 2000", "'runAsGroup': 3000",
	     "{'runAsGroup': 2000, 'fsGroup': 3000, 'fsGroupChangePolicy': 'OnRootMismatch'}"},
	    {"", "'runAsUser': 1001", "{'fsGroup': 1001, 'fsGroupChangePolicy': 'OnRootMismatch'}"},
	    /* A worker that runs as root reads the key as it is. */
	    {"", "'runAsUser': 0", NULL},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char spec[1024], err[ERR_LEN] = "";
		struct job j;
		cJSON *obj, *pod;
		const cJSON *v;

		snprintf(spec, sizeof(spec),
		         "'workers': 1, 'template': {'spec': {%s%s%s'containers': [{'name': "
		         "'worker', 'image': 'w', 'securityContext': {%s}}]}}",
		         cases[i].pod_sc[0] ? "'securityContext': {" : "", cases[i].pod_sc,
		         cases[i].pod_sc[0] ? "}, " : "", cases[i].container_sc);
		obj = make_job(&j, spec);
		pod = pod_spec_pod(&j, 0, 0, err);
		assert_non_null(pod);
		if (cases[i].want)
			assert_json_equal(pod_spec_member(pod, "securityContext"), cases[i].want);
		else
			assert_null(pod_spec_member(pod, "securityContext"));
		cJSON_ArrayForEach(v, pod_spec_member(pod, "volumes"))
		{
			if (strcmp(cJSON_GetObjectItem(v, "name")->valuestring, "mwj-ring-key") ==
			    0)
				assert_json_equal(cJSON_GetObjectItem(v, "secret"),
				                  "{'secretName': '" RING_KEY_SECRET
				                  "', 'defaultMode': 256}");
		}
		cJSON_Delete(pod);
		job_release(&j);
		cJSON_Delete(obj);
	}
}

/* Only the worker container sees the key; a pod is never built before
 * its Secret has a name. */
static void test_pod_spec_mounts_the_key_in_the_worker_container_only(void **state)
{
	struct job j;
	cJSON *obj = make_job(&j, "'workers': 1, 'template': {'spec': {'containers': ["
	                          "{'name': 'proxy', 'image': 'p'}, {'name': 'worker', "
	                          "'image': 'w'}]}}");
	char err[ERR_LEN] = "";
	cJSON *pod = pod_spec_pod(&j, 0, 0, err);

	(void)state;
	assert_null(cJSON_GetObjectItem(container(pod, "proxy"), "volumeMounts"));
	assert_non_null(cJSON_GetObjectItem(container(pod, "worker"), "volumeMounts"));
	cJSON_Delete(pod);
	j.status.ring_key_secret[0] = '\0';
	assert_null(pod_spec_pod(&j, 0, 0, err));
	assert_string_equal(err, "job 'ml/mnist': its ring-key Secret is not made yet");
	job_release(&j);
	cJSON_Delete(obj);
}

/* What pod_spec_tf_config_in_file computes is the length of the real
 * TF_CONFIG, to the byte: a job one worker over the limit goes by file,
 * one worker under it by environment. */
static void test_pod_spec_puts_a_tf_config_too_big_for_the_environment_in_a_file(void **state)
{
	int below = 0;

	(void)state;
	for (int workers = 3400; workers <= 3500; workers++) {
		char spec[512], err[ERR_LEN] = "";
		struct job j;
		cJSON *obj, *pod;
		const char *tf;

		snprintf(spec, sizeof(spec),
		         "'workers': %d, 'template': {'spec': {'containers': [{'name': "
		         "'worker', 'image': 'w'}]}}",
		         workers);
		obj = make_job(&j, spec);
		snprintf(j.status.tf_config_map, JOB_NAME_LEN, "mnist-tf-config-ab12c");
		pod = pod_spec_pod(&j, workers - 1, 0, err);
		assert_non_null(pod);
		tf = env_value(container(pod, "worker"), "TF_CONFIG");
		if (!pod_spec_tf_config_in_file(&j)) {
			/* "TF_CONFIG=" and the NUL fit Linux's limit on one string. */
			assert_non_null(tf);
			assert_true(strlen("TF_CONFIG=") + strlen(tf) + 1 <=
			            POD_SPEC_ENV_STRING_MAX);
			below = workers;
		} else {
			char *real = NULL;
			assert_null(tf);
			assert_string_equal(
			    env_value(container(pod, "worker"), "MWJ_TF_CONFIG_FILE"),
			    "/var/run/mwj/tf-config/tf_config.json");
			/* Just over: the worker before was below. */
			if (workers == below + 1) {
				j.status.tf_config_map[0] = '\0';
				cJSON *cm = pod_spec_tf_config_map(&j, err);
				assert_non_null(cm);
				real = strdup(cJSON_GetObjectItem(cJSON_GetObjectItem(cm, "data"),
				                                  "tf_config.json")
				                  ->valuestring);
				cJSON_Delete(cm);
				assert_non_null(
				    strstr(real, "\"mnist-worker-0.mnist.ml.svc:2222\""));
				assert_null(strstr(real, "\"task\""));
			}
			free(real);
		}
		cJSON_Delete(pod);
		job_release(&j);
		cJSON_Delete(obj);
	}
	/* The limit lies inside the range tried. */
	assert_true(below > 3400 && below < 3500);
}

/* The largest cluster the schema allows: 4,096 workers, the longest job
 * name that count leaves (51 characters) in the longest namespace (63):
 * its ConfigMap holds less than the 1 MiB a ConfigMap may hold. */
static void test_pod_spec_the_largest_cluster_fits_a_config_map(void **state)
{
	char text[1024], err[ERR_LEN] = "";
	char name[52], ns[64];
	struct job j;
	cJSON *obj, *cm;
	const char *data;

	(void)state;
	memset(name, 'n', sizeof(name) - 1);
	name[0] = 'a';
	name[sizeof(name) - 1] = '\0';
	memset(ns, 's', sizeof(ns) - 1);
	ns[sizeof(ns) - 1] = '\0';
	snprintf(text, sizeof(text),
	         "{'metadata': {'name': '%s', 'namespace': '%s', 'uid': 'u-1'}, 'spec': {"
	         "'workers': 4096, 'port': 65535, 'template': {'spec': {'containers': [{'name': "
	         "'worker'}]}}}}",
	         name, ns);
	obj = json_doc_parse(text);
	assert_int_equal(job_parse(&j, obj, err), 0);
	assert_string_equal(j.invalid, "");
	assert_true(pod_spec_tf_config_in_file(&j));
	cm = pod_spec_tf_config_map(&j, err);
	assert_non_null(cm);
	data = cJSON_GetObjectItem(cJSON_GetObjectItem(cm, "data"), "tf_config.json")->valuestring;
	print_message("the largest cluster: %zu bytes\n", strlen(data));
	assert_true(strlen(data) > 700000);
	assert_true(strlen(data) < 1048576);
	cJSON_Delete(cm);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_pod_spec_builds_the_tf_config_map(void **state)
{
	struct job j;
	cJSON *obj = make_job(&j, "'workers': 2, 'template': {'spec': "
	                          "{'containers': [{'name': 'worker'}]}}");
	char err[ERR_LEN] = "";
	cJSON *cm = pod_spec_tf_config_map(&j, err);

	(void)state;
	assert_json_equal(cm, "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {"
	                      "'namespace': 'ml', " LABELS ", " OWNER
	                      ", 'generateName': 'mnist-tf-config-'}, 'data': {"
	                      "'tf_config.json': '{\\'cluster\\':{\\'worker\\':["
	                      "\\'mnist-worker-0.mnist.ml.svc:2222\\',"
	                      "\\'mnist-worker-1.mnist.ml.svc:2222\\']}}'}}");
	cJSON_Delete(cm);
	job_release(&j);
	cJSON_Delete(obj);
}

static void test_pod_spec_check_mounts_refuses_the_operators_own_folders(void **state)
{
	static const struct {
		const char *mount;
		int ok;
	} cases[] = {
	    {"/mwj/checkpoint", 1},       {"/var/run/secrets/mwj", 0},
	    {"/var/run/secrets/mwj/", 0}, {"/var/run/secrets/mwj/backups", 0},
	    {"/var/run/secrets", 0}, /* it would hold the key's folder */
	    {"/var/run/secrets/mwjx", 1}, {"/var/run/mwj/tf-config", 0},
	    {"/var/run/mwj", 0},          {"/", 0},
	    {"/var/run/other", 1},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char spec[512];
		struct job j;
		cJSON *obj;

		snprintf(spec, sizeof(spec),
		         "'workers': 1, 'checkpoint': {'mountPath': '%s', 'volume': "
		         "{'persistentVolumeClaim': {'claimName': 'c'}}}, 'template': {'spec': "
		         "{'containers': [{'name': 'worker'}]}}",
		         cases[i].mount);
		obj = make_job(&j, spec);
		if (cases[i].ok)
			assert_string_equal(j.invalid, "");
		else if (strstr(j.invalid, "collides with") == NULL)
			fail_msg("mountPath '%s': invalid is '%s'", cases[i].mount, j.invalid);
		job_release(&j);
		cJSON_Delete(obj);
	}
}

static void test_pod_spec_owned_means_the_jobs_controller_reference(void **state)
{
	static const struct {
		const char *meta;
		int owned;
	} cases[] = {
	    {"'namespace': 'ml', 'ownerReferences': [{'apiVersion': 'training.mwj.io/v1', "
	     "'kind': 'MultiWorkerJob', 'name': 'mnist', 'uid': 'u-1', 'controller': true}]",
	     1},
	    /* Another job's of the same name (a job deleted and made again). */
	    {"'namespace': 'ml', 'ownerReferences': [{'apiVersion': 'training.mwj.io/v1', "
	     "'kind': 'MultiWorkerJob', 'name': 'mnist', 'uid': 'u-0', 'controller': true}]",
	     0},
	    /* Not the controller reference; no reference; another namespace. */
	    {"'namespace': 'ml', 'ownerReferences': [{'apiVersion': 'training.mwj.io/v1', "
	     "'kind': 'MultiWorkerJob', 'name': 'mnist', 'uid': 'u-1'}]",
	     0},
	    {"'namespace': 'ml'", 0},
	    {"'namespace': 'other', 'ownerReferences': [{'apiVersion': 'training.mwj.io/v1', "
	     "'kind': 'MultiWorkerJob', 'name': 'mnist', 'uid': 'u-1', 'controller': true}]",
	     0},
	    {"'namespace': 'ml', 'ownerReferences': [{'apiVersion': 'apps/v1', "
	     "'kind': 'MultiWorkerJob', 'name': 'mnist', 'uid': 'u-1', 'controller': true}]",
	     0},
	};
	struct job j;
	cJSON *obj = make_job(&j, "'workers': 1, 'template': {'spec': "
	                          "{'containers': [{'name': 'worker'}]}}");

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char text[1024];
		cJSON *o;

		snprintf(text, sizeof(text), "{'metadata': {'name': 'mnist', %s}}", cases[i].meta);
		o = json_doc_parse(text);
		assert_int_equal(pod_spec_owned(o, &j), cases[i].owned);
		cJSON_Delete(o);
	}
	job_release(&j);
	cJSON_Delete(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pod_spec_builds_the_all_fields_example_worker_pod_exactly),
	    cmocka_unit_test(test_pod_spec_gives_the_chief_alone_what_it_reports_with),
	    cmocka_unit_test(test_pod_spec_serves_metrics_on_the_metrics_port_and_says_so),
	    cmocka_unit_test(test_pod_spec_tf_config_names_every_worker_through_the_service),
	    cmocka_unit_test(test_pod_spec_forces_restart_policy_never_and_says_when_it_differed),
	    cmocka_unit_test(test_pod_spec_uses_the_first_container_when_none_is_named_worker),
	    cmocka_unit_test(test_pod_spec_operator_env_overrides_the_users_same_named_entries),
	    cmocka_unit_test(test_pod_spec_keeps_a_users_ring_port_or_adds_one),
	    cmocka_unit_test(
	        test_pod_spec_mounts_its_volumes_in_place_of_the_users_of_the_same_name),
	    cmocka_unit_test(test_pod_spec_refuses_a_template_without_containers_or_a_bad_index),
	    cmocka_unit_test(
	        test_pod_spec_check_names_refuses_names_too_long_at_the_exact_boundary),
	    cmocka_unit_test(test_pod_spec_check_names_refuses_names_that_cannot_name_a_service),
	    cmocka_unit_test(test_pod_spec_builds_the_headless_service_exactly),
	    cmocka_unit_test(test_pod_spec_builds_the_ring_key_secret_exactly),
	    cmocka_unit_test(test_pod_spec_builds_the_network_policy_exactly),
	    cmocka_unit_test(test_pod_view_parse_reads_the_pod_fixtures),
	    cmocka_unit_test(test_pod_view_parse_reads_malformed_marks_as_unknown),
	    cmocka_unit_test(test_pod_view_parse_refuses_a_pod_without_a_name),
	    cmocka_unit_test(test_pod_spec_gives_the_worker_no_token_unless_asked),
	    cmocka_unit_test(test_pod_spec_mounts_the_ring_key_0400_with_a_group_that_can_read_it),
	    cmocka_unit_test(test_pod_spec_mounts_the_key_in_the_worker_container_only),
	    cmocka_unit_test(test_pod_spec_puts_a_tf_config_too_big_for_the_environment_in_a_file),
	    cmocka_unit_test(test_pod_spec_builds_the_tf_config_map),
	    cmocka_unit_test(test_pod_spec_the_largest_cluster_fits_a_config_map),
	    cmocka_unit_test(test_pod_spec_check_mounts_refuses_the_operators_own_folders),
	    cmocka_unit_test(test_pod_spec_owned_means_the_jobs_controller_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
