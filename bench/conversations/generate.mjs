// Generates the development set of bench/conversations/ (see README.md there): multi-session
// conversations between two named speakers, and questions whose answers sit in one or two earlier
// turns, each labelled with its type and the ids of its answering turns. Deterministic: the same
// seed gives the same files, byte for byte.
//
//   node bench/conversations/generate.mjs               writes turns.jsonl, questions.jsonl here
//   node bench/conversations/generate.mjs --out DIR     writes them in DIR instead
//
// How a conversation is made: every fact a question asks about is planted as a turn of one
// session (its `done` form), with near misses planted around it: always the other speaker on
// another item of the same kind (`other`) and small talk with the same item (`chat`); for half
// the facts the other speaker reacting in the question's words without the answer (`reply`); for
// two in five the same person only intending it in an earlier session, in the question's own
// words (`plan`). Sessions are then filled with small talk. Each speaker has each category at
// most once, so a question naming the speaker and the category has one answer.
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import * as L from './lexicon.mjs'
import { rng } from '../lib.mjs'

export const SEED = 20261129
const CONVERSATIONS = 16
const SESSIONS = 14
const MIN_TURNS = 22 // per session, small talk included
const DAY = 86_400_000
/** Questions per speaker of each conversation, by kind of fact. */
const PER_SPEAKER = { single: 10, ref: 6, date: 4, relative: 2, month: 3, multi: 5, open: 5 }
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']
const RELATIVE = [
  ['Yesterday', (d) => day(d - DAY)],
  ['Two days ago', (d) => day(d - 2 * DAY)],
  ['Last week', (d) => `the week before ${day(d)}`],
  ['Last weekend', (d) => `the weekend before ${day(d)}`],
]

function day(ms) {
  const d = new Date(ms)
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`
}
const monthOf = (ms) => `${MONTHS[new Date(ms).getUTCMonth()]} ${new Date(ms).getUTCFullYear()}`
const fill = (template, values) => template.replace(/\{(\w+)\}/g, (_, key) => values[key])
/** `Last week, i joined` must stay `I joined`; an item that opens a template keeps its capital. */
const lowerFirst = (s) => (/^I\b/.test(s) ? s : s[0].toLowerCase() + s.slice(1))

/** Generates the whole set: `{ turns, questions }`, in file order. */
export function generate(seed = SEED) {
  const random = rng(seed)
  const int = (n) => Math.floor(random() * n)
  const pick = (list) => list[int(list.length)]
  const between = (lo, hi) => lo + int(hi - lo + 1)
  /** The first `n` of a seeded shuffle (Fisher-Yates, so each draw advances). */
  const sample = (list, n) => {
    const copy = [...list]
    for (let i = copy.length - 1; i > 0; i--) {
      const j = int(i + 1)
      ;[copy[i], copy[j]] = [copy[j], copy[i]]
    }
    return copy.slice(0, n)
  }

  const turns = []
  const questions = []
  const women = sample(L.WOMEN, CONVERSATIONS)
  const men = sample(L.MEN, CONVERSATIONS)
  for (let c = 0; c < CONVERSATIONS; c++) {
    const conv = `c${String(c + 1).padStart(2, '0')}`
    // Who speaks first alternates, so that neither gender is always the opener.
    const speakers = c % 2 ? [men[c], women[c]] : [women[c], men[c]]
    const pronoun = { [women[c]]: 'she', [men[c]]: 'he' }
    const otherOf = (s) => (s === speakers[0] ? speakers[1] : speakers[0])
    const start = Date.UTC(2025, 0, 6) + int(250) * DAY + between(8, 20) * 3_600_000
    const dates = []
    for (let s = 0, d = start; s < SESSIONS; s++, d += between(12, 30) * DAY) dates.push(d)

    // Planted turns per session, as blocks kept together (a statement and its reply).
    const blocks = dates.map(() => [])
    const plant = (session, block) => {
      blocks[session].push(block)
      return block
    }
    const say = (speaker, text) => ({ speaker, text, id: null })
    const pending = [] // questions whose evidence ids are known once the turns are laid out

    // One-off facts: each speaker gets distinct categories; two speakers never share an item.
    const itemsTaken = new Map(L.CATEGORIES.map((k) => [k.name, new Set()]))
    const kinds = ['single', 'ref', 'date', 'relative']
    for (const speaker of speakers) {
      const other = otherOf(speaker)
      const needed = kinds.reduce((n, k) => n + PER_SPEAKER[k], 0)
      const categories = sample(L.CATEGORIES, needed)
      let next = 0
      for (const kind of kinds) {
        for (let i = 0; i < PER_SPEAKER[kind]; i++) {
          const k = categories[next++]
          const x = pick(k.items.filter((it) => !itemsTaken.get(k.name).has(it)))
          itemsTaken.get(k.name).add(x)
          const y = pick(k.items.filter((it) => it !== x))
          const session = between(1, SESSIONS - 1)
          // Single-hop alternates the anchored wording and the paraphrased one; a reference
          // draws either; a temporal question always has the anchored one.
          const wording = kind === 'single' ? i % 2 : kind === 'ref' ? int(2) : 0
          let text = fill(k.done[wording], { x })
          let rel = null
          if (kind === 'relative') {
            rel = pick(RELATIVE)
            text = `${rel[0]}, ${lowerFirst(text)}`
          }
          const done = say(speaker, text)
          // Near misses: every fact has the other speaker's item and small talk on its own item;
          // half have the other speaker's reaction in the question's words, two in five the same
          // speaker only planning it in an earlier session.
          plant(session, random() < 0.5 ? [done, say(other, pick(k.reply))] : [done])
          if (random() < 0.4) plant(between(0, session - 1), [say(speaker, pick(k.plan))])
          plant(int(SESSIONS), [say(other, fill(pick(k.other), { y }))])
          plant(int(SESSIONS), [say(pick(speakers), fill(pick(k.chat), { x }))])
          const answer = fill(k.answer, { x })
          const style = wording === 0 ? 'anchor' : 'paraphrase'
          if (kind === 'single') {
            pending.push({ type: 'single-hop', style, question: fill(k.q[wording], { who: speaker }), answer, evidence: [done] })
          } else if (kind === 'ref') {
            // `she`/`he` (the pair is a woman and a man), or the other speaker's friend: the
            // name in the question is the one speaker whose turns do not answer.
            const ref = i % 2 ? 'partner' : 'pronoun'
            const who = ref === 'pronoun' ? pronoun[speaker] : `${other}'s friend`
            pending.push({ type: 'speaker-ref', style: `${ref}-${style}`, question: fill(k.q[wording], { who }), answer, evidence: [done] })
          } else {
            const when = kind === 'date' ? day(dates[session]) : rel[1](dates[session])
            pending.push({ type: 'temporal', style: kind, question: `When did ${speaker} ${k.when}?`, answer: when, evidence: [done] })
          }
        }
      }
    }

    // Repeatable events in distinct months: the month tells them apart.
    const repeatables = sample(L.REPEATABLE, 2)
    speakers.forEach((speaker, n) => {
      const r = repeatables[n]
      const months = new Set()
      const sessions = []
      for (const s of sample([...dates.keys()], SESSIONS)) {
        if (sessions.length === PER_SPEAKER.month) break
        if (months.has(monthOf(dates[s]))) continue
        months.add(monthOf(dates[s]))
        sessions.push(s)
      }
      const items = sample(r.items, sessions.length)
      sessions.forEach((s, i) => {
        const done = say(speaker, fill(pick(r.done), { x: items[i] }))
        plant(s, [done, say(otherOf(speaker), pick(L.REACTIONS))])
        const question = fill(r.q, { who: speaker, month: monthOf(dates[s]) })
        pending.push({ type: 'temporal', style: 'month', question, answer: items[i], evidence: [done] })
      })
    })

    // Multi-hop: a relative moves abroad in one session, their new job comes up in a later one
    // by name only; the question names the relation and the country, never the person.
    const bridges = sample(L.BRIDGE_NAMES, 2 * PER_SPEAKER.multi)
    speakers.forEach((speaker, n) => {
      const relations = sample(L.RELATIONS, PER_SPEAKER.multi)
      relations.forEach((rel, i) => {
        const name = bridges[n * PER_SPEAKER.multi + i]
        const [city, country] = pick(L.PLACES)
        const job = pick(L.JOBS)
        const first = between(0, SESSIONS - 2)
        const moved = say(speaker, fill(pick(L.MOVED), { rel, name, city }))
        const employed = say(speaker, fill(pick(i % 2 ? L.EMPLOYED_REL : L.EMPLOYED), { rel, name, job }))
        plant(first, [moved, say(otherOf(speaker), `That is a big step for ${name}, I hope the move goes smoothly.`)])
        plant(between(first + 1, SESSIONS - 1), [employed])
        const question = fill(pick(L.MULTI_Q), { rel, who: speaker, country })
        pending.push({ type: 'multi-hop', style: i % 2 ? 'bridge-named' : 'bridge', question, answer: `a ${job}`, evidence: [moved, employed] })
      })
    })

    // Open-domain: a trait stated in passing; the question asks what it implies.
    const traits = sample(L.TRAITS, 2 * PER_SPEAKER.open)
    speakers.forEach((speaker, n) => {
      traits.slice(n * PER_SPEAKER.open, (n + 1) * PER_SPEAKER.open).forEach((t, i) => {
        const says = say(speaker, t.says)
        plant(int(SESSIONS), [says])
        plant(int(SESSIONS), [say(otherOf(speaker), t.contrast)])
        const question = fill(t.q[i % 2], { who: speaker })
        pending.push({ type: 'open-domain', style: i % 2 ? 'anchor' : 'paraphrase', question, answer: fill(t.answer, { who: speaker }), evidence: [says] })
      })
    })

    // Lay out each session: a greeting, then planted blocks and small talk in a seeded order.
    dates.forEach((date, s) => {
      const opener = speakers[s % 2]
      const session = [...blocks[s]]
      let size = session.reduce((n, b) => n + b.length, 1)
      while (size < MIN_TURNS + (s % 3) * 2) {
        const speaker = pick(speakers)
        const reaction = `${pick(L.REACTIONS)} ${pick(L.FOLLOW_UPS)}`.trim()
        session.push([say(speaker, `${pick(L.OPENERS)} ${pick(L.SMALL_TALK)}.`), say(otherOf(speaker), reaction)])
        size += 2
      }
      const laid = [[say(opener, fill(pick(L.GREETINGS), { other: otherOf(opener) }))], ...sample(session, session.length)].flat()
      laid.forEach((turn, t) => {
        turn.id = `${conv}-s${String(s + 1).padStart(2, '0')}-t${String(t + 1).padStart(2, '0')}`
        turns.push({ id: turn.id, conversation: conv, session: s + 1, date: new Date(date + t * 60_000).toISOString(), speaker: turn.speaker, text: turn.text })
      })
    })
    for (const q of pending) {
      questions.push({
        id: `q${String(questions.length + 1).padStart(4, '0')}`,
        conversation: conv,
        type: q.type,
        style: q.style,
        question: q.question,
        answer: q.answer,
        evidence: q.evidence.map((turn) => turn.id),
      })
    }
  }
  return { turns, questions }
}

/** The files' bytes: one JSON object a line. */
export function serialise({ turns, questions }) {
  const jsonl = (rows) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n'
  return { 'turns.jsonl': jsonl(turns), 'questions.jsonl': jsonl(questions) }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--out')
  const out = at > 0 ? process.argv[at + 1] : dirname(fileURLToPath(import.meta.url))
  mkdirSync(out, { recursive: true })
  const set = generate()
  for (const [name, bytes] of Object.entries(serialise(set))) writeFileSync(join(out, name), bytes)
  console.error(`${set.turns.length} turns, ${set.questions.length} questions written to ${out}`)
}
