{{/* The name of the release's objects. */}}
{{- define "voda.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "voda.labels" -}}
app.kubernetes.io/name: voda
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "voda.selector" -}}
app.kubernetes.io/name: voda
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Where the API creates jobs. */}}
{{- define "voda.jobNamespace" -}}
{{- .Values.api.jobNamespace | default .Values.watchNamespace | default .Release.Namespace -}}
{{- end -}}
