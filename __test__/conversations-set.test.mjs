// The development set of issue 30 (bench/conversations/): the committed files are what the
// generator gives, and the set is as large, as labelled and as hard as its README says.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'

import { generate, serialise } from '../bench/conversations/generate.mjs'

const dir = join(import.meta.dirname, '..', 'bench', 'conversations')
const committed = (name) => readFileSync(join(dir, name), 'utf8')
const rows = (name) =>
  committed(name)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
const turns = rows('turns.jsonl')
const questions = rows('questions.jsonl')
const turnById = new Map(turns.map((t) => [t.id, t]))
/** Node 20 has no `Map.groupBy`. */
function groupBy(list, key) {
  const groups = new Map()
  for (const x of list) groups.set(key(x), [...(groups.get(key(x)) ?? []), x])
  return groups
}
const TYPES = { 'single-hop': 300, 'speaker-ref': 150, 'multi-hop': 150, temporal: 250, 'open-domain': 150 }

test('the generator gives the committed files byte for byte', () => {
  const files = serialise(generate())
  assert.deepEqual(Object.keys(files).sort(), ['questions.jsonl', 'turns.jsonl'])
  for (const [name, bytes] of Object.entries(files)) assert.ok(bytes === committed(name), `${name} differs from a fresh generation: run node bench/conversations/generate.mjs`)
})

test('another seed gives another set (the seed is used)', () => {
  assert.notEqual(serialise(generate(1))['turns.jsonl'], committed('turns.jsonl'))
})

test('conversations: two speakers, many dated sessions, thousands of turns', () => {
  assert.ok(turns.length >= 3000, `${turns.length} turns`)
  assert.equal(turnById.size, turns.length, 'turn ids are unique')
  const byConversation = groupBy(turns, (t) => t.conversation)
  assert.ok(byConversation.size >= 10)
  for (const [conv, list] of byConversation) {
    assert.equal(new Set(list.map((t) => t.speaker)).size, 2, `${conv} has two speakers`)
    const sessions = groupBy(list, (t) => t.session)
    assert.ok(sessions.size >= 10, `${conv} has many sessions`)
    for (const [, session] of sessions) assert.ok(session.length >= 20, `${conv}: a session of many turns`)
    for (let i = 1; i < list.length; i++) assert.ok(Date.parse(list[i].date) > Date.parse(list[i - 1].date), `${conv}: turns in time order`)
  }
})

test('every question is labelled: a type, a style, an answer, answering turns that exist in its conversation', () => {
  assert.ok(questions.length >= 1000, `${questions.length} questions`)
  assert.equal(new Set(questions.map((q) => q.id)).size, questions.length)
  for (const q of questions) {
    assert.ok(Object.hasOwn(TYPES, q.type), `${q.id}: type ${q.type}`)
    assert.ok(q.style && q.question && q.answer, q.id)
    assert.ok(q.evidence.length >= 1, q.id)
    for (const id of q.evidence) assert.equal(turnById.get(id)?.conversation, q.conversation, `${q.id}: ${id}`)
  }
  for (const [type, least] of Object.entries(TYPES)) {
    const n = questions.filter((q) => q.type === type).length
    assert.ok(n >= least, `${type}: ${n} questions, at least ${least}`)
  }
})

test('multi-hop answers are split across two sessions; temporal answers are not in the turn', () => {
  const months = /\b(January|February|March|April|May|June|July|August|September|October|November|December|20\d\d)\b/
  for (const q of questions) {
    const evidence = q.evidence.map((id) => turnById.get(id))
    if (q.type === 'multi-hop') {
      assert.equal(evidence.length, 2, q.id)
      assert.notEqual(evidence[0].session, evidence[1].session, `${q.id}: two sessions`)
    }
    if (q.type === 'temporal') {
      assert.doesNotMatch(evidence[0].text, months, `${q.id}: the date comes from the session, not the turn`)
      if (q.style === 'month') assert.match(q.question, months, q.id)
    }
  }
})

// The content words of a text, crudely stemmed (enough to see `adopted` in `adopt`), without
// the speakers' names, the pronouns and function words: what a question shares with its answer.
const FUNCTION_WORDS = new Set(
  'a about all an and any are as at be been by can could did do does every for from get got has have he her him his how i in into is it its me my new now of off on one or our out over recently she should so that the their them they this to up us was we were what when where which who whom whose why will with would you your'.split(' '),
)
function contentWords(text, names) {
  const words = text.toLowerCase().replace(/'s\b/g, '').match(/[a-z]+/g) ?? []
  const stem = (w) => w.replace(/ies$/, 'y').replace(/(?<=\w{3})(ing|ed|es|s)$/, '')
  return new Set(words.filter((w) => !FUNCTION_WORDS.has(w) && !names.has(w)).map(stem))
}

test('paraphrase questions share no content word with their answer; anchored ones share at most two, at most half', () => {
  const names = new Set(turns.map((t) => t.speaker.toLowerCase()))
  let paraphrased = 0
  for (const q of questions) {
    if (!['single-hop', 'speaker-ref', 'open-domain'].includes(q.type)) continue
    const asked = contentWords(q.question, names)
    const answering = contentWords(turnById.get(q.evidence[0]).text, names)
    const shared = [...asked].filter((w) => answering.has(w))
    if (q.style.endsWith('paraphrase')) {
      paraphrased++
      assert.deepEqual(shared, [], `${q.id}: ${q.question}`)
    } else {
      assert.ok(shared.length <= 2 && shared.length <= asked.size / 2, `${q.id} shares ${shared.join(', ')}: ${q.question}`)
    }
  }
  assert.ok(paraphrased >= 250, `${paraphrased} paraphrase questions`)
})
