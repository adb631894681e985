// Command kube-proxy is upstream's cmd/kube-proxy, built against the control plane's module pins
// (this folder's go.mod is tools/cluster/go.mod, tidied for this package) so that it runs at the
// control plane's Kubernetes version and reuses its Go build cache.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
