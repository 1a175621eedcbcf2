package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirflow/weir/arrowflow"
)

// The owner of an exactly-once sink's transactional ids (see
// arrowflow.OwnedSink) is kept where every Kafka cluster keeps small
// durable records without a topic of weir's own: the metadata of a
// committed offset, in the consumer group <prefix>.weir-owner, for
// partition 0 of the output topic. Nobody consumes with that group.

// ownerGroupSuffix names the group that records the owner.
const ownerGroupSuffix = ".weir-owner"

func (s *Sink) ownerGroup(job string) string { return s.prefix(job) + ownerGroupSuffix }

var _ arrowflow.OwnedSink = (*Sink)(nil)

// ownerUnknowable reports errors after which the owner cannot be read or
// recorded (the principal may not use consumer groups): the sink then
// goes on without an owner record, as before, with a warning.
func ownerUnknowable(err error) bool {
	return errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.UnsupportedVersion)
}

// Owner implements arrowflow.OwnedSink: the owner recorded for job's
// transactional id prefix (zero when none, or when the sink is not
// exactly-once and has no transactional ids).
func (s *Sink) Owner(ctx context.Context, job string) (arrowflow.Owner, error) {
	if s.opts.DeliveryGuarantee != ExactlyOnce {
		return arrowflow.Owner{}, nil
	}
	cl, err := kgo.NewClient(s.baseOpts()...)
	if err != nil {
		return arrowflow.Owner{}, fmt.Errorf("kafka sink: %w", err)
	}
	defer cl.Close()
	return s.readOwner(ctx, kadm.NewClient(cl), job)
}

func (s *Sink) readOwner(ctx context.Context, adm *kadm.Client, job string) (arrowflow.Owner, error) {
	var o arrowflow.Owner
	group := s.ownerGroup(job)
	offsets, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = offsets.Error()
	}
	if err != nil {
		if ownerUnknowable(err) {
			s.logger.Warn("kafka sink: cannot read the owner of the transactional ids (consumer group not allowed); two jobs on one prefix are not detected", "group", group, "err", err)
			return o, nil
		}
		if errors.Is(err, kerr.GroupIDNotFound) || errors.Is(err, kerr.UnknownTopicOrPartition) {
			return o, nil
		}
		return o, fmt.Errorf("kafka sink: read the owner of transactional id prefix %q (group %s): %w", s.prefix(job), group, err)
	}
	r, ok := offsets.Lookup(s.opts.Topic, 0)
	if !ok || r.Metadata == "" {
		return o, nil
	}
	if err := json.Unmarshal([]byte(r.Metadata), &o); err != nil || o.ID == "" {
		return arrowflow.Owner{}, fmt.Errorf("kafka sink: the owner record of transactional id prefix %q (group %s) is damaged (%q); take the output over with --take-over-output", s.prefix(job), group, r.Metadata)
	}
	return o, nil
}

// Claim implements arrowflow.OwnedSink: it records owner in the group's
// offset metadata, and from then on the sink commits only while the
// record names owner. Before the output topic exists (its producers
// create it) there is nothing to own yet: the record is written at the
// first commit.
func (s *Sink) Claim(ctx context.Context, job string, owner arrowflow.Owner) error {
	if s.opts.DeliveryGuarantee != ExactlyOnce {
		return nil
	}
	data, err := json.Marshal(owner)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.claimJob, s.claimID, s.claimData = job, owner.ID, string(data)
	s.mu.Unlock()
	cl, err := kgo.NewClient(s.baseOpts()...)
	if err != nil {
		return fmt.Errorf("kafka sink: %w", err)
	}
	defer cl.Close()
	return s.recordOwner(ctx, kadm.NewClient(cl))
}

// recordOwner writes the claimed owner's record; an output topic that does
// not exist yet leaves it for the first commit.
func (s *Sink) recordOwner(ctx context.Context, adm *kadm.Client) error {
	s.mu.Lock()
	job, data := s.claimJob, s.claimData
	s.mu.Unlock()
	group := s.ownerGroup(job)
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: s.opts.Topic, Partition: 0, At: 0, LeaderEpoch: -1, Metadata: data})
	res, err := adm.CommitOffsets(ctx, group, offsets)
	if err == nil {
		err = res.Error()
	}
	switch {
	case err == nil:
		s.mu.Lock()
		s.claimRecorded = true
		s.mu.Unlock()
		return nil
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return nil
	case ownerUnknowable(err):
		s.logger.Warn("kafka sink: cannot record the owner of the transactional ids (consumer group not allowed); two jobs on one prefix are not detected", "group", group, "err", err)
		s.mu.Lock()
		s.claimID = "" // nothing to check against
		s.mu.Unlock()
		return nil
	default:
		return fmt.Errorf("kafka sink: record the owner of transactional id prefix %q (group %s): %w", s.prefix(job), group, err)
	}
}

// checkOwner fails with arrowflow.ErrFenced when this sink claimed its
// job's prefix and the record now names another owner; it writes a record
// Claim could not write yet. A sink that claimed nothing (a job without a
// checkpoint folder, or a principal without group rights) is not checked:
// its transactional ids fence it anyway.
func (s *Sink) checkOwner(ctx context.Context) error {
	s.mu.Lock()
	job, mine, recorded := s.claimJob, s.claimID, s.claimRecorded
	s.mu.Unlock()
	if mine == "" {
		return nil
	}
	cl, err := kgo.NewClient(s.baseOpts()...)
	if err != nil {
		return fmt.Errorf("kafka sink: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	o, err := s.readOwner(ctx, adm, job)
	if err != nil {
		return err
	}
	switch {
	case o.ID == "" && !recorded:
		return s.recordOwner(ctx, adm)
	case o.ID == "":
		return nil
	}
	return arrowflow.CheckOwner(fmt.Sprintf("transactional id prefix %q", s.prefix(job)), o, mine)
}
