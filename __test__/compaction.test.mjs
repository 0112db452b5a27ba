// planCompaction and readSkillContextPolicy (seed 003 context editing).
import test from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { core, tempDir } from './helpers.mjs'

const { planCompaction, readSkillContextPolicy, parseConfig, isLoaError } = core
const part = (id, target, tokens, turn, extra = {}) => ({ id, target, tokens, turn, ...extra })

test('clears in the policy\'s priority order, oldest first, until under the threshold', () => {
  const items = [
    part('debug-1', 'verbose_debug', 100, 1),
    part('read-1', 'superseded_file_reads', 100, 1),
    part('tool-2', 'stale_tool_results', 100, 2),
    part('tool-1', 'stale_tool_results', 100, 1),
    part('user-1', 'user_message', 300, 1),
    part('now', 'user_message', 50, 10),
  ]
  const plan = planCompaction(items, { contextWindowTokens: 1000, compactThresholdPercent: 60 })
  assert.equal(plan.thresholdTokens, 600)
  assert.equal(plan.tokensBefore, 750)
  assert.deepEqual(plan.clear.map((c) => c.id), ['tool-1', 'tool-2'])
  assert.deepEqual([plan.tokensFreed, plan.tokensAfter, plan.underThreshold, plan.signal], [200, 550, true, 'COMPACTION_COMPLETE'])

  const deeper = planCompaction(items, { contextWindowTokens: 1000, compactThresholdPercent: 30 })
  assert.deepEqual(deeper.clear.map((c) => c.id), ['tool-1', 'tool-2', 'read-1', 'debug-1'])
  assert.equal(deeper.underThreshold, false, 'user messages and the recent turn are never cleared')
  assert.equal(deeper.signal, 'CONTEXT_NEAR_LIMIT')
  assert.match(deeper.message, /still over/)

  const reordered = planCompaction(items, { contextWindowTokens: 1000, compactThresholdPercent: 60, clearTargets: ['verbose_debug', 'superseded_file_reads'] })
  assert.deepEqual(reordered.clear.map((c) => c.id), ['debug-1', 'read-1'])
})

test('nothing to do below the threshold; default window 200000 at 80 %', () => {
  const plan = planCompaction([part('a', 'stale_tool_results', 159999, 1)])
  assert.deepEqual([plan.needed, plan.signal, plan.clear.length, plan.thresholdTokens], [false, null, 0, 160000])
  assert.equal(planCompaction([part('a', 'stale_tool_results', 160000, 1), part('b', 'user_message', 1, 9)]).signal, 'COMPACTION_COMPLETE')
})

test('never clears preserved artifacts or recent turns, even over the threshold', () => {
  const items = [
    part('traj', 'stale_tool_results', 500, 1, { artifact: 'trajectory_events' }),
    part('beads', 'active_beads', 100, 1),
    part('cov', 'intermediate_outputs', 100, 1, { artifact: 'coverage_data' }),
    part('recent', 'stale_tool_results', 300, 7),
    part('old', 'stale_tool_results', 50, 2),
  ]
  const plan = planCompaction(items, { contextWindowTokens: 1000, compactThresholdPercent: 10, preserveArtifacts: ['coverage_data'] })
  assert.deepEqual(plan.clear.map((c) => c.id), ['old'])
  assert.equal(plan.underThreshold, false)
  assert.deepEqual(plan.protected.map((p) => [p.id, p.reason]), [
    ['traj', 'preserved_artifact'],
    ['beads', 'preserved_artifact'],
    ['cov', 'preserved_artifact'],
    ['recent', 'recent_turn'],
  ])
  assert.equal(plan.protectedTokens, 1000)
  // The mandatory five stay preserved even when the policy lists none; recent turns can be 0.
  const bare = planCompaction(items, { contextWindowTokens: 1000, compactThresholdPercent: 10, preserveArtifacts: [], preserveRecentTurns: 0 })
  assert.deepEqual(bare.clear.map((c) => c.id), ['old', 'recent', 'cov'])
})

test('phase details only once their phase completed and is listed', () => {
  const items = [
    part('init', 'completed_phase_details', 300, 1, { phase: 'initialization' }),
    part('impl', 'completed_phase_details', 300, 1, { phase: 'implementation' }),
    part('review', 'completed_phase_details', 300, 1, { phase: 'review' }),
    part('now', 'user_message', 10, 10),
  ]
  const plan = planCompaction(items, { contextWindowTokens: 1000, compactThresholdPercent: 10, completedPhases: ['initialization', 'review'] })
  assert.deepEqual(plan.clear.map((c) => c.id), ['init'])
  assert.deepEqual(plan.protected.filter((p) => p.reason === 'phase_not_completed').map((p) => p.id), ['impl', 'review'])
})

test('the workspace configuration is a valid policy', () => {
  const { config } = parseConfig('context_editing:\n  enabled: false\n  preserve_recent_turns: 2\n')
  const plan = planCompaction([part('a', 'stale_tool_results', 900, 1)], { ...config.contextEditing, contextWindowTokens: 1000 })
  assert.deepEqual([plan.clear.length, plan.signal], [0, 'CONTEXT_NEAR_LIMIT'])
  assert.match(plan.message, /disabled/)
  const renamed = planCompaction([part('a', 'stale_tool_results', 900, 1), part('b', 'x', 1, 9)], { contextWindowTokens: 1000, runtimeSignals: { contextNearLimit: 'NEAR', compactionComplete: 'DONE' } })
  assert.equal(renamed.signal, 'DONE')
})

test('bad items and policies are E_INVALID_ARGUMENT naming the field', () => {
  for (const [items, policy, name] of [
    [[part('a', 'x', 1, 1), part('a', 'y', 1, 1)], undefined, 'items[1].id'],
    [[part('a', 'x', -1, 1)], undefined, 'items[0].tokens'],
    [[{ id: 'a', target: 'x', tokens: 1 }], undefined, 'items[0].turn'],
    [[{ id: 'a', tokens: 1, turn: 1 }], undefined, 'items[0].target'],
    ['nope', undefined, 'items'],
    [[], { clearTargets: ['everything'] }, 'policy.clearTargets[0]'],
    [[], { compactThresholdPercent: 0 }, 'compactThresholdPercent'],
    [[], { preserveArtifacts: 'x' }, 'policy.preserveArtifacts'],
  ]) {
    assert.throws(() => planCompaction(items, policy), (e) => isLoaError(e) && e.code === 'E_INVALID_ARGUMENT' && e.message.includes(name), name)
  }
})

test('readSkillContextPolicy applies a SKILL.md frontmatter context_editing block', (t) => {
  const dir = tempDir(t)
  const path = join(dir, 'SKILL.md')
  writeFileSync(
    path,
    '---\nname: implementing-tasks\ncontext_editing:\n  clear_after_phases: [setup, coding]\n  preserve_artifacts:\n    - test_results\n    - coverage_data\n---\n\n# Implementing tasks\n',
  )
  const skill = readSkillContextPolicy(path)
  assert.equal(skill.name, 'implementing-tasks')
  assert.equal(skill.found, true)
  assert.deepEqual(skill.warnings, [])
  assert.deepEqual(skill.policy.clearAfterPhases, ['setup', 'coding'])
  assert.deepEqual(skill.policy.preserveArtifacts.slice(-2), ['test_results', 'coverage_data'])
  assert.equal(skill.policy.preserveArtifacts.length, 7)
  assert.equal(skill.policy.preserveRecentTurns, 5)
  assert.equal(skill.policy.currentTurn, null)
  // The returned policy feeds the planner directly.
  const plan = planCompaction([part('cov', 'intermediate_outputs', 900, 1, { artifact: 'coverage_data' }), part('b', 'x', 1, 9)], { ...skill.policy, contextWindowTokens: 1000 })
  assert.deepEqual(plan.clear, [])

  // On top of a workspace policy.
  const base = { preserveArtifacts: ['workspace_thing'], preserveRecentTurns: 2 }
  const merged = readSkillContextPolicy(path, base)
  assert.deepEqual(merged.policy.preserveArtifacts, ['workspace_thing', 'test_results', 'coverage_data'])
  assert.equal(merged.policy.preserveRecentTurns, 2)

  writeFileSync(path, '# no frontmatter\n')
  assert.equal(readSkillContextPolicy(path).found, false)
})

test('readSkillContextPolicy errors: E_IO, E_CONFIG_INVALID with the key', (t) => {
  const dir = tempDir(t)
  assert.throws(() => readSkillContextPolicy(join(dir, 'missing.md')), (e) => e.code === 'E_IO')
  const path = join(dir, 'SKILL.md')
  writeFileSync(path, '---\ncontext_editing:\n  clear_targets: [stale_tool_results, everything]\n---\n')
  assert.throws(
    () => readSkillContextPolicy(path),
    (e) => isLoaError(e) && e.code === 'E_CONFIG_INVALID' && e.key === 'context_editing.clear_targets[1]' && e.message.includes('SKILL.md'),
  )
})
