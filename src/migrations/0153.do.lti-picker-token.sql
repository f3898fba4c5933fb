-- 0153 (issue #22, Deep Linking 2.0): the deep-linking picker's token is single use too. The
-- picker page carries a signed token bound to the launch (src/lti/deep-linking/token.ts); the
-- response endpoint records its id here (kind 'picker') in the transaction that answers, so a
-- second submission of the same picker is refused. Nothing else of a deep link is stored.
alter table lti_used_values drop constraint lti_used_values_kind_check;
alter table lti_used_values add constraint lti_used_values_kind_check check (kind in ('state', 'nonce', 'picker'));
