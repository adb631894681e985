// Command metrics-server is the upstream metrics-server (sigs.k8s.io/metrics-server), built as
// its own cmd/metrics-server does, for the local control plane: `deno task cluster up
// --metrics-server` starts it on loopback and registers it as the v1beta1.metrics.k8s.io
// APIService. It is a module of its own so that the default control plane needs none of it.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/logs"

	"sigs.k8s.io/metrics-server/cmd/metrics-server/app"
)

func main() {
	logs.InitLogs()
	defer logs.FlushLogs()
	cmd := app.NewMetricsServerCommand(genericapiserver.SetupSignalHandler())
	if err := cmd.Execute(); err != nil {
		logs.FlushLogs()
		os.Exit(1)
	}
}
