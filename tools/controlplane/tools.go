//go:build tools

// Package tools pins the control plane that scripts/engine/build builds for the cluster fixture
// (tests/support/cluster.py): etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
