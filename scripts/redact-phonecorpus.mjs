// Phone numbers in sentences, for `npm run eval:redact` (issue 29): libphonenumber's own example
// number of every region and number type (testdata/phone/example_numbers.tsv, extracted from its
// metadata by scripts/phone-metadata.mjs, Apache-2.0), written the ways the metadata formats them
// (national and international format, E.164) and with extensions, inside sentences of several
// languages. The numbers are data we did not choose; the sentences say what people write around a
// number, most of them with their language's word for a phone, some with none.
//
// Each row: { region, cc, type, nsn, variant, text, spans: [[start, end]] } (UTF-16 offsets).
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

export const SENTENCES = [
  'Please call me at {} tomorrow.',
  'My phone number is {}.',
  'You can reach the front desk on {} if anything changes.',
  'Contact: Anna Schmidt, {}',
  'Ruf mich an unter {}, ich bin ab 9 Uhr da.',
  'Meine Telefonnummer lautet {}.',
  'Appelez-moi au {} après 18h.',
  'Mon numéro de portable : {}',
  'Llámame al {} cuando llegues.',
  'Su teléfono es {} y su correo ana@example.com.',
  'Il mio numero di cellulare è {}.',
  'Meu telefone é {}, pode ligar a qualquer hora.',
  'Bel me op {} als je vragen hebt.',
  'Mój numer telefonu to {}.',
  'Мой номер телефона: {}.',
  'Позвоните по номеру {} завтра.',
  '電話番号は{}です。',
  '请拨打{}联系我。',
  '전화번호는 {}입니다.',
  'Beni {} numaralı telefondan arayabilirsiniz.',
  'Customer {} asked for a refund on order 48213.',
  'Notes from the meeting: {} (Tom, after 5pm).',
]

const EXTENSIONS = [' ext. 204', ' x57', ' ext 1234', ' #12']

/** The example numbers: { region, cc, type, nsn, national, international }. */
export function exampleNumbers() {
  return readFileSync(join(root, 'testdata/phone/example_numbers.tsv'), 'utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const [region, cc, type, nsn, national, international] = l.split('\t')
      return { region, cc, type, nsn, national: national === '-' ? null : national, international: international === '-' ? null : international }
    })
}

export function phoneCorpus() {
  const rows = []
  let k = 0
  const put = (n, variant, value) => {
    const template = SENTENCES[k++ % SENTENCES.length]
    const at = template.indexOf('{}')
    rows.push({ region: n.region, cc: n.cc, type: n.type, nsn: n.nsn, variant, text: template.slice(0, at) + value + template.slice(at + 2), spans: [[at, at + value.length]] })
  }
  for (const n of exampleNumbers()) {
    if (n.national) put(n, 'national', n.national)
    if (n.international) put(n, 'international', n.international)
    put(n, 'e164', `+${n.cc}${n.nsn}`)
    const ext = EXTENSIONS[k % EXTENSIONS.length]
    if (n.national) put(n, 'national+ext', n.national + ext)
    else if (n.international) put(n, 'international+ext', n.international + ext)
  }
  return rows
}
