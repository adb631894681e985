// Command k8s is one multi-call binary holding the control plane that vkubelet's tests and demo
// run: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl, each built from
// its upstream command constructor. One binary means one link step on a cold build; each
// component still runs as its own process.
package main

import (
	"fmt"
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

const usage = "usage: k8s {etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|pki|cert} [flags]"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	name, args := os.Args[1], os.Args[2:]
	// Each constructor reads os.Args itself, so present the component as if it were argv[0].
	os.Args = append([]string{name}, args...)
	switch name {
	case "etcd":
		etcdmain.Main(os.Args)
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kubectl":
		cmd := kubectl.NewDefaultKubectlCommand()
		if err := cli.RunNoErrOutput(cmd); err != nil {
			os.Exit(1)
		}
	case "pki", "cert":
		run := runPKI
		if name == "cert" {
			run = runCert
		}
		if err := run(args); err != nil {
			fmt.Fprintf(os.Stderr, "k8s %s: %v\n", name, err)
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown component %q\n%s\n", name, usage)
		os.Exit(2)
	}
}
