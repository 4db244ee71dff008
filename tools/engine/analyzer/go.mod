// The policy analyzer shim only: Pulumi's own `pulumi-analyzer-policy-python` (python/dist/ in the sdk
// module, removed after v3.220.0), taken from the module cache by scripts/engine/build, its hash in go.sum.
module gpu-ci/tools/engine/analyzer

go 1.26.6

require github.com/pulumi/pulumi/sdk/v3 v3.220.0
