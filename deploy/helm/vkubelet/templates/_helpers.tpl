{{/* The name of every object: the release name, or <release>-vkubelet. */}}
{{- define "vkubelet.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select this release's pods. */}}
{{- define "vkubelet.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* A StatefulSet (a persistent cert dir per replica) unless the certificates come from files. */}}
{{- define "vkubelet.kind" -}}
{{- if eq .Values.certificates.mode "files" -}}Deployment{{- else -}}StatefulSet{{- end -}}
{{- end -}}

{{/* "true" when vkubelet runs as its node (system:node:<nodeName>): modes node and bootstrap. */}}
{{- define "vkubelet.asNode" -}}
{{- if has .Values.certificates.mode (list "node" "bootstrap") -}}true{{- end -}}
{{- end -}}

{{/* Refuses value sets that cannot work, naming the value and the fix. */}}
{{- define "vkubelet.validate" -}}
{{- $mode := .Values.certificates.mode -}}
{{- if not (has $mode (list "node" "files" "csr" "bootstrap")) -}}
{{- fail (printf "certificates.mode %q is not one of node, files, csr, bootstrap" $mode) -}}
{{- end -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElect) -}}
{{- fail "replicas > 1 needs leaderElect: true (two replicas that both write would fight over the node); set replicas: 1 or leaderElect: true" -}}
{{- end -}}
{{- if and .Values.leaderElect (eq .Values.provider.name "process") -}}
{{- fail "provider process keeps pods inside the vkubelet process and refuses --leader-elect; set leaderElect: false and replicas: 1" -}}
{{- end -}}
{{- if and .Values.leaderElect (include "vkubelet.asNode" .) -}}
{{- fail (printf "certificates.mode %s runs vkubelet as system:node:<nodeName>, and the NodeRestriction admission plugin lets a node write no Lease but kube-node-lease/<nodeName>, so --leader-elect cannot hold kube-node-lease/vkubelet-<nodeName>; set leaderElect: false and replicas: 1, or use mode files or csr for several replicas" $mode) -}}
{{- end -}}
{{- with .Values.bootstrap.token -}}
{{- if not (regexMatch "^[a-z0-9]{6}\\.[a-z0-9]{16}$" .) -}}
{{- fail "bootstrap.token must be <id>.<secret> with 6 and 16 characters of [a-z0-9] (kubeadm token generate makes one)" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The bootstrap token, given or new: a dict with id and secret. */}}
{{- define "vkubelet.bootstrapToken" -}}
{{- $token := .Values.bootstrap.token | default (printf "%s.%s" (randAlphaNum 6 | lower) (randAlphaNum 16 | lower)) -}}
{{- $parts := splitList "." $token -}}
id: {{ index $parts 0 | quote }}
secret: {{ index $parts 1 | quote }}
{{- end -}}

{{/* The serving certificate's Secret (certificates.mode files). */}}
{{- define "vkubelet.servingSecret" -}}
{{- .Values.certificates.secretName | default (printf "%s-serving" (include "vkubelet.fullname" .)) -}}
{{- end -}}

{{/* Who holds the bootstrap credential: the ServiceAccount (node) or the token's group. */}}
{{- define "vkubelet.bootstrapSubject" -}}
{{- if eq .Values.certificates.mode "node" -}}
- kind: ServiceAccount
  name: {{ include "vkubelet.fullname" . }}
  namespace: {{ .Release.Namespace }}
{{- else -}}
- apiGroup: rbac.authorization.k8s.io
  kind: Group
  name: {{ .Values.bootstrap.group }}
{{- end -}}
{{- end -}}
