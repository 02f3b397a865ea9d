package kube

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/vodascheduler/voda/pkg/estimator"
)

// HistoryConfigMap keeps the estimator's category histories and the steps
// the batch models are learnt from (in the settings namespace), so that a
// new leader knows what the last one learnt.
const (
	HistoryConfigMap = "voda-history"
	historyKey       = "categories.json"
	stepsKey         = "steps.json"
)

// loadHistory reads the saved category histories, if any.
func (c *Controller) loadHistory(ctx context.Context) error {
	if c.opts.ConfigNamespace == "" {
		return nil
	}
	var cm corev1.ConfigMap
	err := c.reader.Get(ctx, types.NamespacedName{Namespace: c.opts.ConfigNamespace, Name: HistoryConfigMap}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", HistoryConfigMap, err)
	}
	// Either unreadable is not worth refusing to schedule over: start
	// afresh without it, and say so.
	var hs map[string]estimator.History
	if err := json.Unmarshal([]byte(cm.Data[historyKey]), &hs); err != nil {
		c.log.Error(err, "category history unreadable; starting without it", "configMap", HistoryConfigMap)
		hs = nil
	}
	var steps map[string]estimator.SavedSteps
	if data, ok := cm.Data[stepsKey]; ok {
		if err := json.Unmarshal([]byte(data), &steps); err != nil {
			c.log.Error(err, "batch models' steps unreadable; starting without them", "configMap", HistoryConfigMap, "key", stepsKey)
			steps = nil
		}
	}
	c.estMu.Lock()
	c.est.SetHistories(hs)
	c.steps.Load(steps)
	c.estMu.Unlock()
	c.log.Info("category history loaded", "categories", len(hs), "batchModels", len(steps))
	return nil
}

// saveHistory writes the category histories. The caller holds estMu.
func (c *Controller) saveHistory(ctx context.Context) {
	if c.opts.ConfigNamespace == "" {
		return
	}
	data, err := json.Marshal(c.est.Histories())
	if err != nil {
		c.log.Error(err, "category history")
		return
	}
	steps, err := json.Marshal(c.steps.Saved())
	if err != nil {
		c.log.Error(err, "batch models' steps")
		return
	}
	key := types.NamespacedName{Namespace: c.opts.ConfigNamespace, Name: HistoryConfigMap}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cm corev1.ConfigMap
		err := c.reader.Get(ctx, key, &cm)
		if apierrors.IsNotFound(err) {
			cm.Namespace, cm.Name = key.Namespace, key.Name
			cm.Data = map[string]string{historyKey: string(data), stepsKey: string(steps)}
			return c.client.Create(ctx, &cm)
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[historyKey], cm.Data[stepsKey] = string(data), string(steps)
		return c.client.Update(ctx, &cm)
	})
	if err != nil {
		c.log.Error(err, "save category history", "configMap", HistoryConfigMap)
	}
}
