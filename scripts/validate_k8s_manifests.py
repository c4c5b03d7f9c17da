"""Validates Kubernetes manifests (JSON) against kubernetes-validate's packaged, strict schemas.

Run by scripts/validate-k8s-manifests.sh inside its pinned venv; see that script for usage.

    python validate_k8s_manifests.py DIR VERSION...

Every *.json file in DIR holds one object (or a JSON array of objects):
- a batch/v1 Job is validated as it is;
- a JobSet (jobset.x-k8s.io) has no schema in kubernetes-validate, so each spec.replicatedJobs[].template (a
  JobTemplateSpec: metadata and spec only) is wrapped as a batch/v1 Job named <jobset>-<replicatedJob> (in the
  JobSet's namespace unless the template names one) and validated as that Job;
- any other object is validated as its own kind when kubernetes-validate has a schema for it, and fails when it
  has none (a missing schema is an error here, not the CLI's warning).

Each object is checked with strict schemas (unknown fields are errors) against every VERSION, and VERSION must be
one the installed kubernetes-validate ships exactly (no silent fallback to an older schema). Schemas come from
the package itself; nothing is fetched. Prints one summary line and exits 0, or prints one line per failure
(file, object, version, field path, message) and exits 1.
"""

import functools
import glob
import json
import os
import sys

import kubernetes_validate
import kubernetes_validate.utils as kv_utils

JOB_TEMPLATE_KEYS = {"metadata", "spec"}


def cache_schemas():
    """Parses each packaged schema file once instead of once per validate() call (same files, same contents)."""
    kv_utils.schema_contents = functools.lru_cache(maxsize=None)(kv_utils.schema_contents)


def describe(obj):
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    kind = obj.get("kind") if isinstance(obj, dict) else None
    return "%s/%s" % (kind or "?", name or "?")


def objects_to_validate(path, doc):
    """Yields (label, object, is_jobset_template) for one file's document, or raises ValueError."""
    docs = doc if isinstance(doc, list) else [doc]
    for index, obj in enumerate(docs):
        if not isinstance(obj, dict) or "kind" not in obj or "apiVersion" not in obj:
            raise ValueError("document %d is not a Kubernetes object (no apiVersion/kind)" % index)
        group = obj["apiVersion"].split("/")[0]
        if obj["kind"] == "JobSet" and group == "jobset.x-k8s.io":
            meta = obj.get("metadata") or {}
            replicated = (obj.get("spec") or {}).get("replicatedJobs")
            if not isinstance(replicated, list) or not replicated:
                raise ValueError("%s has no spec.replicatedJobs" % describe(obj))
            for i, rjob in enumerate(replicated):
                template = rjob.get("template") if isinstance(rjob, dict) else None
                if not isinstance(template, dict):
                    raise ValueError("%s spec.replicatedJobs[%d] has no template" % (describe(obj), i))
                extra = sorted(set(template) - JOB_TEMPLATE_KEYS)
                if extra:
                    raise ValueError("%s spec.replicatedJobs[%d].template has fields a JobTemplateSpec does not: %s"
                                     % (describe(obj), i, ", ".join(extra)))
                job_meta = dict(template.get("metadata") or {})
                job_meta.setdefault("name", "%s-%s" % (meta.get("name", "jobset"), rjob.get("name", i)))
                if "namespace" in meta:
                    job_meta.setdefault("namespace", meta["namespace"])
                job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta}
                if "spec" in template:
                    job["spec"] = template["spec"]
                label = "%s spec.replicatedJobs[%d] (%s) as batch/v1 Job" % (describe(obj), i, rjob.get("name"))
                yield label, job, True
        else:
            yield "%s %s" % (obj["apiVersion"], describe(obj)), obj, False


def main(argv):
    if len(argv) < 3:
        print("usage: validate_k8s_manifests.py DIR VERSION...", file=sys.stderr)
        return 2
    directory, versions = argv[1], argv[2:]

    shipped = sorted({kv_utils.major_minor(v) for v in kv_utils.all_versions()})
    missing = [v for v in versions if v not in shipped]
    if missing:
        print("k8s-validate: kubernetes-validate %s ships no schemas for %s (it has %s)"
              % (kubernetes_validate.__version__, " ".join(missing), " ".join(shipped)), file=sys.stderr)
        return 2

    files = sorted(glob.glob(os.path.join(directory, "*.json")))
    if not files:
        print("k8s-validate: no *.json files in %s" % directory, file=sys.stderr)
        return 2

    cache_schemas()
    failures = []
    jobs = templates = others = 0
    for path in files:
        name = os.path.relpath(path)
        if name.startswith(".."):
            name = os.path.abspath(path)
        try:
            with open(path) as f:
                doc = json.load(f)
            objects = list(objects_to_validate(path, doc))
        except (OSError, ValueError) as e:
            failures.append("%s: %s" % (name, e))
            continue
        for label, obj, is_template in objects:
            if is_template:
                templates += 1
            elif obj["kind"] == "Job" and obj["apiVersion"] == "batch/v1":
                jobs += 1
            else:
                others += 1
            for version in versions:
                try:
                    used = kubernetes_validate.validate(obj, version, strict=True)
                    if used != version:
                        failures.append("%s: %s: validated against %s instead of %s" % (name, label, used, version))
                except kubernetes_validate.ValidationError as e:
                    field = ".".join(str(p) for p in e.path) or "(top level)"
                    failures.append("%s: %s: invalid against %s at %s: %s" % (name, label, version, field, e.message))
                except kubernetes_validate.SchemaNotFoundError as e:
                    failures.append("%s: %s: %s (neither a Job nor a JobSet, and no core schema)"
                                    % (name, label, e.message))
                except Exception as e:  # noqa: BLE001 - report any oracle failure against the file, then go on
                    failures.append("%s: %s: could not be validated against %s: %s: %s"
                                    % (name, label, version, type(e).__name__, e))

    if failures:
        for line in failures:
            print("k8s-validate: FAIL %s" % line, file=sys.stderr)
        print("k8s-validate: %d failure(s) in %d files (kubernetes-validate %s, strict, %s)"
              % (len(failures), len(files), kubernetes_validate.__version__, " ".join(versions)), file=sys.stderr)
        return 1

    counts = "%d Jobs + %d JobSet job templates" % (jobs, templates)
    if others:
        counts += " + %d other core object%s" % (others, "" if others == 1 else "s")
    print("k8s-validate: %d files, %s, valid against %s (kubernetes-validate %s, strict)"
          % (len(files), counts, " ".join(versions), kubernetes_validate.__version__))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
