// What Kapsule installs besides the cluster, for the test cluster (tests/support/cluster.py): the GPU operator's
// chart (its ClusterPolicy CRD, template and values) and Cilium's CRDs, copied from Go's module cache by
// scripts/engine/build after checking each module's hash against go.sum. No package of them is built.
module gpu-ci/tools/cluster-data

go 1.26.6

require (
	github.com/NVIDIA/gpu-operator v0.0.0-20250917190837-d73a0086a6ba
	github.com/cilium/cilium v1.20.2
)
